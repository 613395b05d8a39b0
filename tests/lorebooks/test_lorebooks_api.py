"""Lorebooks through HTTP: World Info and Character Card (JSON, PNG) import, export, entries under CAS."""

from __future__ import annotations

import pytest

from lorebooks.formats import png_with_card
from tests.support.api import assert_envelope

from .support import import_world, mara_card, world_info

pytestmark = pytest.mark.django_db
BOOK = {"entries": [{"keys": ["a"], "content": "x"}]}


def test_world_info_imports_and_exports_field_for_field(alice):
    body = import_world(alice)
    assert (body["id"], body["format"], body["entryCount"]) == ("eldoria", "worldinfo", 14)
    regex = next(e for e in body["entries"] if e["uid"] == "4")
    assert regex["entry"]["key"] == ["/ma(ra|rah) ?vell/i"] and regex["revision"] == 1
    exported = alice.get("/v1/lorebooks/eldoria/export?format=worldinfo").json()
    assert exported == world_info()  # every field, unknown ones (characterFilter, triggers, …) included
    assert alice.get("/v1/lorebooks/eldoria/export").json() == world_info()  # its own format by default


@pytest.mark.parametrize("spec", ["chara_card_v2", "chara_card_v3"])
def test_character_card_json_imports_and_exports_field_for_field(alice, spec):
    card = mara_card(spec)
    response = alice.post("/v1/lorebooks", {"id": "mara", "name": "Mara", "characterCard": card})
    assert response.status_code == 201, response.json()
    entries = {e["uid"]: e["entry"] for e in response.json()["entries"]}
    assert entries["0"]["key"] == ["Varn"] and entries["0"]["position"] == 0
    assert (entries["1"]["selectiveLogic"], entries["1"]["probability"], entries["1"]["matchWholeWords"]) == (
        3,
        50,
        True,
    )
    assert entries["1"]["keysecondary"] == ["Oderic"] and entries["1"]["order"] == 90
    assert entries["2"]["disable"] is True and entries["2"]["selective"] is False
    assert alice.get("/v1/lorebooks/mara/export?format=charactercard").json() == card


@pytest.mark.parametrize("v3", [False, True])
def test_a_png_card_imports_from_its_chara_chunk(alice, v3):
    card = mara_card("chara_card_v3" if v3 else "chara_card_v2")
    upload = _png_upload(card, v3=v3)
    response = alice.client.post(
        "/v1/lorebooks", {"id": "mara-png", "name": "Mara", "file": upload}, format="multipart"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["entryCount"] == 3
    assert alice.get("/v1/lorebooks/mara-png/export").json() == card


def _png_upload(card: dict, *, v3: bool):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("mara.png", png_with_card(card, v3=v3), content_type="image/png")


@pytest.mark.parametrize("value", [10**400, -(10**400), "x\u0000"], ids=["10^400", "-10^400", "nul"])
def test_a_png_card_holding_what_no_store_keeps_is_400_naming_its_path(alice, value):
    """The card is JSON the API reads like a body (docs/contract.md, "Request bodies"): 10**400 would read as
    Infinity in JavaScript, and PostgreSQL refuses a NUL."""
    card = mara_card()
    card["data"]["character_book"]["entries"][1]["extensions"]["x"] = value
    response = alice.client.post(
        "/v1/lorebooks", {"id": "mara-png", "name": "Mara", "file": _png_upload(card, v3=False)}, format="multipart"
    )
    error = assert_envelope(response, 400, "invalid_request")
    assert error["details"] == {"path": "/data/character_book/entries/1/extensions/x"}
    assert alice.get("/v1/lorebooks").json()["results"] == []


def test_a_png_without_a_card_is_400_and_creates_nothing(alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("x.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, content_type="image/png")
    response = alice.client.post("/v1/lorebooks", {"id": "x", "name": "x", "file": upload}, format="multipart")
    assert assert_envelope(response, 400)["details"]["field"] == "file"
    assert alice.get("/v1/lorebooks").json()["results"] == []


def test_cross_format_export_converts_as_sillytavern_does(alice):
    import_world(alice)
    card = alice.get("/v1/lorebooks/eldoria/export?format=charactercard").json()
    entries = {e["id"]: e for e in card["data"]["character_book"]["entries"]}
    assert card["spec"] == "chara_card_v2" and len(entries) == 14
    assert entries[9]["secondary_keys"] == ["token", "coin"] and entries[9]["extensions"]["selectiveLogic"] == 1
    assert entries[12]["enabled"] is False and entries[5]["extensions"]["case_sensitive"] is True
    back = alice.post("/v1/lorebooks", {"id": "round", "name": "r", "characterCard": card})
    views = {e["uid"]: e["entry"] for e in back.json()["entries"]}
    original = {e["uid"]: e["entry"] for e in alice.get("/v1/lorebooks/eldoria").json()["entries"]}
    assert views == original  # World Info → card → World Info keeps every field memoryhub reads


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"id": "b", "name": "b"}, "worldInfo"),
        ({"id": "b", "name": "b", "worldInfo": {"entries": 3}}, "worldInfo"),
        ({"id": "b", "name": "b", "worldInfo": {"entries": {"0": {"key": "not a list"}}}}, "worldInfo.entries.0.key"),
        (
            {"id": "b", "name": "b", "worldInfo": {"entries": {"0": {"selectiveLogic": 7}}}},
            "worldInfo.entries.0.selectiveLogic",
        ),
        (
            {"id": "b", "name": "b", "characterCard": {"spec": "chara_card_v2", "data": {}}},
            "characterCard.data.character_book",
        ),
        (
            {"id": "b", "name": "b", "characterCard": {"spec": "chara_card_v9", "data": {"character_book": BOOK}}},
            "characterCard.spec",
        ),
        ({"id": "b", "name": "b", "characterCard": {"data": {"character_book": BOOK}}}, "characterCard.spec"),
    ],
)
def test_bad_files_are_400_naming_the_field_and_create_nothing(alice, body, field):
    assert assert_envelope(alice.post("/v1/lorebooks", body), 400)["details"]["field"] == field
    assert alice.get("/v1/lorebooks").json()["results"] == []


def test_an_id_in_use_is_409_and_another_product_cannot_see_it(alice, bob):
    import_world(alice)
    assert_envelope(alice.post("/v1/lorebooks", {"id": "eldoria", "name": "x", "worldInfo": {"entries": {}}}), 409)
    assert_envelope(bob.get("/v1/lorebooks/eldoria"), 404, "not_found")
    assert_envelope(bob.get("/v1/lorebooks/eldoria/entries/0"), 404, "not_found")
    assert bob.get("/v1/lorebooks").json()["results"] == []


def test_an_edit_merges_into_the_native_entry_under_compare_and_set(alice):
    import_world(alice)
    url = "/v1/lorebooks/eldoria/entries/1"
    response = alice.patch(url, {"expectedRevision": 1, "entry": {"content": "Varn is sinking.", "order": 95}})
    assert response.status_code == 200, response.json()
    assert (response.json()["revision"], response.json()["entry"]["content"]) == (2, "Varn is sinking.")
    stale = assert_envelope(alice.patch(url, {"expectedRevision": 1, "entry": {"content": "lost"}}), 409)
    assert stale["details"]["currentRevision"] == 2
    exported = alice.get("/v1/lorebooks/eldoria/export").json()
    expected = world_info()
    expected["entries"]["1"] |= {"content": "Varn is sinking.", "order": 95}
    assert exported == expected  # the unknown fields of the edited entry are still there
    history = alice.get(f"{url}/versions").json()["results"]
    assert [(v["revision"], v["cause"], v["entry"]["content"][:8]) for v in history] == [
        (2, "api_key", "Varn is "),
        (1, "import", "Varn flo"),
    ]


def test_a_card_entry_edit_lands_where_the_card_keeps_the_field(alice):
    alice.post("/v1/lorebooks", {"id": "mara", "name": "Mara", "characterCard": mara_card()})
    changes = {"disable": True, "selectiveLogic": 2, "position": 0, "key": ["canal"]}
    assert alice.patch("/v1/lorebooks/mara/entries/1", {"expectedRevision": 1, "entry": changes}).status_code == 200
    entry = alice.get("/v1/lorebooks/mara/export").json()["data"]["character_book"]["entries"][1]
    assert (entry["enabled"], entry["keys"], entry["position"]) == (False, ["canal"], "before_char")
    assert entry["extensions"]["selectiveLogic"] == 2 and entry["extensions"]["position"] == 0
    assert (entry["priority"], entry["name"], entry["use_regex"]) == (10, "crown", True)  # unknown to memoryhub: kept


@pytest.mark.parametrize(
    ("entry", "field"),
    [({"order": "high"}, "entry.order"), ({"selectiveLogic": 4}, "entry.selectiveLogic"), ({"colour": "red"}, "entry")],
)
def test_a_bad_edit_is_400_and_changes_nothing(alice, entry, field):
    import_world(alice)
    error = assert_envelope(
        alice.patch("/v1/lorebooks/eldoria/entries/0", {"expectedRevision": 1, "entry": entry}), 400
    )
    assert error["details"]["field"] == field
    assert alice.get("/v1/lorebooks/eldoria/entries/0").json()["revision"] == 1
    assert alice.get("/v1/lorebooks/eldoria/export").json() == world_info()


def test_create_and_delete_entries(alice):
    import_world(alice)
    created = alice.post("/v1/lorebooks/eldoria/entries", {"entry": {"key": ["barge"], "content": "Barges are slow."}})
    assert created.status_code == 201, created.json()
    assert (created.json()["uid"], created.json()["entry"]["order"]) == ("14", 100)
    assert alice.get("/v1/lorebooks/eldoria/export").json()["entries"]["14"]["key"] == ["barge"]
    assert_envelope(alice.delete("/v1/lorebooks/eldoria/entries/14?expectedRevision=9"), 409, "revision_conflict")
    assert alice.delete("/v1/lorebooks/eldoria/entries/14?expectedRevision=1").status_code == 204
    assert "14" not in alice.get("/v1/lorebooks/eldoria/export").json()["entries"]
    assert_envelope(alice.get("/v1/lorebooks/eldoria/entries/14"), 404)
    history = alice.get("/v1/lorebooks/eldoria/entries/14/versions").json()["results"]
    assert [(v["revision"], v["deleted"]) for v in history] == [(2, True), (1, False)]


def test_the_entries_list_holds_the_live_entries_and_a_deleted_book_is_gone(alice, bob):
    book = import_world(alice)
    listed = alice.get("/v1/lorebooks/eldoria/entries")
    assert listed.status_code == 200
    assert sorted(e["uid"] for e in listed.json()["results"]) == sorted(e["uid"] for e in book["entries"])
    assert_envelope(bob.get("/v1/lorebooks/eldoria/entries"), 404)  # another product's book
    assert_envelope(bob.delete("/v1/lorebooks/eldoria"), 404)
    assert alice.delete("/v1/lorebooks/eldoria").status_code == 204
    assert alice.get("/v1/lorebooks").json()["results"] == []
    assert_envelope(alice.get("/v1/lorebooks/eldoria/entries"), 404)


def test_a_card_entry_without_a_position_is_placed_after_the_character_as_sillytavern_does(alice):
    """SillyTavern's convertCharacterBook: extensions.position, else before only for "before_char"."""
    entries = [
        {
            "id": 0,
            "keys": ["river"],
            "content": "no position",
            "enabled": True,
            "insertion_order": 10,
            "extensions": {},
        },
        {"id": 1, "keys": ["hill"], "content": "before", "enabled": True, "position": "before_char"},
        {
            "id": 2,
            "keys": ["sea"],
            "content": "ext",
            "enabled": True,
            "position": "before_char",
            "extensions": {"position": 4},
        },
    ]
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": "Mara", "character_book": {"entries": entries}},
    }
    assert alice.post("/v1/lorebooks", {"id": "pos", "name": "pos", "characterCard": card}).status_code == 201
    positions = [alice.get(f"/v1/lorebooks/pos/entries/{uid}").json()["entry"]["position"] for uid in (0, 1, 2)]
    assert positions == [1, 0, 4]
    exported = alice.get("/v1/lorebooks/pos/export", data={"format": "worldinfo"}).json()["entries"]
    assert [exported[str(uid)]["position"] for uid in (0, 1, 2)] == [1, 0, 4]
