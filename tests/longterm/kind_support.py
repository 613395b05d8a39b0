"""A product-defined kind (`diet`) and requests of it, shared by the kind, expiry and supersession tests."""

from __future__ import annotations

import copy

KINDS_URL = "/v1/memory-kinds"

DIET_KIND = {
    "name": "diet",
    "description": "What the user does not eat",
    "contentSchema": {
        "type": "object",
        "properties": {
            "restriction": {"type": "string", "minLength": 1, "x-single-valued": True},
            "note": {"type": "string", "maxLength": 200},
        },
        "required": ["restriction"],
        "additionalProperties": False,
    },
    "statedFields": ["restriction"],
    "searchable": True,
    "textField": "note",
    "maxPerUser": 3,
    "defaultTtlDays": 30,
}

VEGAN = {
    "kind": "diet",
    "content": {"restriction": "vegan", "note": "The user is vegan: no meat, fish, eggs or dairy"},
    "evidence": "I am vegan",
    "source": "Hi! I am vegan, so please keep that in mind for recipes.",
    "consent": True,
}

VEGETARIAN = {
    "kind": "diet",
    "content": {"restriction": "vegetarian", "note": "The user is vegetarian and eats eggs and dairy"},
    "evidence": "I'm vegetarian now",
    "source": "Update: I'm vegetarian now, eggs are fine.",
    "consent": True,
}


def diet(**changes) -> dict:
    body = copy.deepcopy(VEGAN)
    body.update(changes)
    return body


def define(api, body: dict | None = None, **changes) -> dict:
    data = copy.deepcopy(body or DIET_KIND)
    data.update(changes)
    response = api.post(KINDS_URL, data)
    assert response.status_code == 201, response.json()
    return response.json()
