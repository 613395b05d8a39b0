"""Lorebook files used by the tests, and importing them through the API."""

from __future__ import annotations

import copy
import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def world_info() -> dict:
    return json.loads((DATA / "eldoria_world_info.json").read_text(encoding="utf-8"))


def mara_card(spec: str = "chara_card_v2") -> dict:
    card = json.loads((DATA / "mara_card_v2.json").read_text(encoding="utf-8"))
    if spec == "chara_card_v3":
        card = copy.deepcopy(card) | {"spec": "chara_card_v3", "spec_version": "3.0"}
        card["data"]["group_only_greetings"] = []
    return card


def import_world(api, slug: str = "eldoria", body: dict | None = None) -> dict:
    response = api.post("/v1/lorebooks", {"id": slug, "name": "Eldoria", "worldInfo": body or world_info()})
    assert response.status_code == 201, response.json()
    return response.json()
