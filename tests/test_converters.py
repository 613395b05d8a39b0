"""Row ids in paths: one a database column can hold, or simply not found (never a 500)."""

from __future__ import annotations

import pytest
from django.urls import Resolver404, resolve

from memoryhub.converters import MAX_ROW_ID
from tests.support.api import assert_envelope

HUGE = "9223372036854775808"  # 2**63: past a bigint


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", f"/v1/users/u1/conversations/c1/turns/{HUGE}"),
        ("post", f"/v1/users/u1/conversations/c1/turns/{HUGE}/complete"),
        ("get", f"/v1/webhooks/{HUGE}"),
        ("post", f"/v1/webhooks/{HUGE}/deliveries/128/redeliver"),
        ("post", f"/v1/webhooks/1/deliveries/{HUGE}/redeliver"),
        ("get", f"/v1/lorebooks/lb1/proposals/{HUGE}"),
        ("post", f"/v1/lorebooks/lb1/proposals/{HUGE}/accept"),
        ("post", f"/v1/lorebooks/lb1/proposals/{HUGE}/reject"),
    ],
)
def test_an_id_past_a_bigint_is_not_found(alice, method, path):
    assert_envelope(getattr(alice, method)(path), 404, "not_found")


def test_the_largest_id_reaches_its_view_and_one_digit_more_does_not():
    assert resolve(f"/v1/users/u1/conversations/c1/turns/{MAX_ROW_ID}").kwargs["turn_id"] == MAX_ROW_ID
    assert resolve(f"/v1/webhooks/{MAX_ROW_ID}").kwargs["endpoint_id"] == MAX_ROW_ID
    with pytest.raises(Resolver404):
        resolve(f"/v1/webhooks/{MAX_ROW_ID}0")


def test_the_largest_id_is_looked_up_and_not_found(alice):
    assert_envelope(alice.get(f"/v1/users/u1/conversations/c1/turns/{MAX_ROW_ID}"), 404, "not_found")
    assert_envelope(alice.get(f"/v1/webhooks/{MAX_ROW_ID}"), 404, "not_found")


def test_the_schema_bounds_path_ids(alice):
    schema = alice.get("/api/schema/?format=json").json()
    parameter = next(p for p in schema["paths"]["/v1/webhooks/{endpoint_id}"]["get"]["parameters"] if p["in"] == "path")
    assert parameter["schema"] == {"type": "integer", "minimum": 0, "maximum": MAX_ROW_ID}


def test_every_integer_path_id_of_the_schema_is_bounded(alice):
    """docs/contract.md: an integer id in a path has at most 18 digits, and the schema says so for each one."""
    schema = alice.get("/api/schema/?format=json").json()
    integers = {
        (path, p["name"]): p["schema"]
        for path, operations in schema["paths"].items()
        for operation in operations.values()
        for p in operation.get("parameters", [])
        if p["in"] == "path" and p["schema"].get("type") == "integer"
    }
    assert ("/v1/lorebooks/{lorebook_id}/proposals/{proposal_id}", "proposal_id") in integers
    bounded = {"type": "integer", "minimum": 0, "maximum": MAX_ROW_ID}
    assert {key for key, bounds in integers.items() if bounds != bounded} == set()
