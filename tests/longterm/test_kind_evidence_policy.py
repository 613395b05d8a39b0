"""A kind's `evidencePolicy` through HTTP: "quote" admits facts drawn from a conversation, "statement" does not."""

from __future__ import annotations

import pytest

from memories.longterm.kinds import EVIDENCE_POLICIES
from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion, MemoryKind
from tests.longterm.kind_support import KINDS_URL, define
from tests.longterm.support import create, memories_url
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

OBSERVATION_KIND = {
    "name": "observation",
    "contentSchema": {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1}, "place": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    "statedFields": ["place"],
    "textField": "text",
}
SUPPORT_GROUP = "I went to a LGBTQ support group yesterday and it was so powerful."


def observed(text: str, evidence: str, source: str | None = None, **content) -> dict:
    return {
        "kind": "observation",
        "content": {"text": text, **content},
        "evidence": evidence,
        "source": source if source is not None else f"Caroline: {evidence}",
        "consent": True,
    }


# Past events, third-person sentences, one-off remarks: facts a statement kind refuses (same body).
FACTS = [
    ("past event", observed("Caroline attended an LGBTQ support group", SUPPORT_GROUP), "past"),
    ("third person", observed("Melanie loves painting lakes", "Melanie loves painting lakes."), "other_person"),
    ("one-off", observed("Caroline skipped the gym once", "Just this once, I skipped the gym."), "one_off"),
    ("stated field", observed("Caroline went to a group", SUPPORT_GROUP, place="LGBTQ support group"), "past"),
]


@pytest.mark.parametrize("body,reason", [f[1:] for f in FACTS], ids=[f[0] for f in FACTS])
def test_a_quote_kind_admits_a_fact_that_a_statement_kind_refuses(alice, body, reason):
    define(alice, OBSERVATION_KIND)
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert (error["details"]["code"], error["details"]["reason"]) == ("not_durable_preference", reason), error
    assert AdmissionRefusal.objects.get().decision["policy"] == "statement"
    changed = alice.patch(f"{KINDS_URL}/observation", {"evidencePolicy": "quote"})
    assert changed.status_code == 200 and changed.json()["evidencePolicy"] == "quote", changed.json()
    record = create(alice, body)
    assert record["content"] == body["content"] and record["evidence"] == body["evidence"]
    assert LongTermMemory.objects.get().kind == "observation"


QUOTE_REFUSALS = [
    ("no consent", dict(consent=False), "no_consent", "/consent"),
    ("not verbatim", dict(evidence="I went to an LGBTQ support group"), "evidence_not_in_source", "/evidence"),
    ("secret", dict(source=f"{SUPPORT_GROUP} My password is hunter2abc"), "secret_detected", "/source"),
    ("not stated", dict(content={"text": "x", "place": "a yoga class"}), "not_stated", "/content/place"),
    ("schema", dict(content={"text": ""}), "schema_violation", "/content/text"),
]


@pytest.mark.parametrize("changes,code,path", [r[1:] for r in QUOTE_REFUSALS], ids=[r[0] for r in QUOTE_REFUSALS])
def test_a_quote_kind_still_refuses_without_consent_a_verbatim_quote_or_with_a_secret(alice, changes, code, path):
    define(alice, OBSERVATION_KIND, evidencePolicy="quote")
    body = {**observed("Caroline attended an LGBTQ support group", SUPPORT_GROUP), **changes}
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert (error["details"]["reason"], error["details"]["path"]) == (code, path), error
    assert not LongTermMemory.objects.exists()
    refusal = AdmissionRefusal.objects.get()
    assert refusal.code == code
    if code in ("no_consent", "evidence_not_in_source", "secret_detected"):  # the policy's own checks say so
        assert refusal.decision["policy"] == "quote"


def test_the_policy_defaults_to_statement_and_is_read_listed_and_recorded(alice):
    kind = define(alice, OBSERVATION_KIND)
    assert kind["evidencePolicy"] == "statement"
    assert alice.get(f"{KINDS_URL}/observation").json()["evidencePolicy"] == "statement"
    define(alice, OBSERVATION_KIND, name="fact", evidencePolicy="quote")
    listed = {k["name"]: k["evidencePolicy"] for k in alice.get(KINDS_URL).json()["results"]}
    assert listed == {"fact": "quote", "observation": "statement"}
    body = {**observed("Caroline attended an LGBTQ support group", SUPPORT_GROUP), "kind": "fact"}
    record = create(alice, body)
    version = LongTermMemoryVersion.objects.get(memory_id=record["id"])
    assert version.decision == {"rules": "admit", "uncertain": False, "judge": None, "policy": "quote"}


def test_a_statement_kind_still_admits_a_stated_preference(alice):
    define(alice, OBSERVATION_KIND)
    create(alice, observed("Caroline likes hiking", "I love hiking", "I love hiking, by the way."))


@pytest.mark.parametrize("value", ["verbatim", "", "QUOTE", None, 7])
def test_an_unknown_policy_is_400_and_changes_nothing(alice, value):
    body = {**OBSERVATION_KIND, "evidencePolicy": value}
    error = assert_envelope(alice.post(KINDS_URL, body), 400, "invalid_request")
    assert error["details"].get("field") == "evidencePolicy" or "evidencePolicy" in error["details"]["fields"], error
    assert not MemoryKind.objects.exists()
    define(alice, OBSERVATION_KIND, evidencePolicy="quote")
    error = assert_envelope(alice.patch(f"{KINDS_URL}/observation", {"evidencePolicy": value}), 400, "invalid_request")
    assert error["details"].get("field") == "evidencePolicy" or "evidencePolicy" in error["details"]["fields"], error
    assert MemoryKind.objects.get().evidence_policy == "quote"


def test_an_unknown_string_names_the_field_through_the_kind_rules(alice):
    error = assert_envelope(alice.post(KINDS_URL, {**OBSERVATION_KIND, "evidencePolicy": "verbatim"}), 400)
    assert error == {
        "code": "invalid_request",
        "message": "invalid memory kind: evidencePolicy: must be one of 'statement', 'quote'",
        "details": {"field": "evidencePolicy"},
    }


def test_a_patch_judges_later_writes_only(alice):
    define(alice, OBSERVATION_KIND, evidencePolicy="quote")
    body = observed("Caroline attended an LGBTQ support group", SUPPORT_GROUP)
    first = create(alice, body)
    changed = alice.patch(f"{KINDS_URL}/observation", {"description": "Facts"}).json()
    assert changed["evidencePolicy"] == "quote"  # a PATCH that does not name it keeps it
    alice.patch(f"{KINDS_URL}/observation", {"evidencePolicy": "statement"})
    assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert [m["id"] for m in alice.get(memories_url()).json()["results"]] == [first["id"]]  # kept


def test_the_model_offers_exactly_the_policies_the_rules_know():
    field = MemoryKind._meta.get_field("evidence_policy")
    assert tuple(value for value, _ in field.choices) == EVIDENCE_POLICIES
    assert field.default == "statement"


def test_the_openapi_schema_documents_the_policy(alice):
    schema = alice.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    for name in ("KindCreateRequest", "PatchedKindUpdateRequest", "Kind"):
        prop = schema[name]["properties"]["evidencePolicy"]
        enum = schema[prop["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"] if "allOf" in prop else prop["enum"]
        assert enum == ["statement", "quote"] and "verbatim" in prop["description"], (name, prop)
    assert "evidencePolicy" in schema["Kind"]["required"]
