"""Admission judges what the quote means, not cue words (issue 13, item 1), in English, Chinese and mixed."""

from __future__ import annotations

import pytest

from memories.longterm.admission import (
    EVIDENCE_NOT_IN_SOURCE,
    NO_CONSENT,
    NOT_DURABLE_PREFERENCE,
    SECRET_DETECTED,
    admit,
    check_generic,
    stated_in,
)
from memories.longterm.models import AdmissionRefusal, LongTermMemory
from tests.longterm.support import memories_url
from tests.support.api import assert_envelope

# The six phrasings of the issue, refused before (422 not_durable_preference), with the claims they state.
ISSUE_PHRASINGS = [
    ("Answer briefly.", {"detail": "brief"}),
    ("Keep your replies short and to the point.", {"detail": "brief"}),
    ("Explain technical topics in detail.", {"detail": "detailed"}),
    ("Use English with me.", {"language": "en"}),
    ("回答简短点。", {"detail": "brief"}),
    ("说中文。", {"language": "zh"}),
]


def rules(evidence: str, content: dict, *, source: str | None = None):
    return admit("preference", consent=True, source=source or evidence, evidence=evidence, content=content, judge=None)


@pytest.mark.parametrize(
    ("evidence", "claims"),
    [
        *ISSUE_PHRASINGS,
        ("Short answers, please.", {"detail": "brief"}),
        ("I prefer concise answers.", {"detail": "brief"}),
        ("please always use English", {"language": "en"}),
        ("以后用英文回答", {"language": "en"}),
        ("English only.", {"language": "en"}),
        ("中文就行。", {"language": "zh"}),
        ("Answer in 中文 please.", {"language": "zh"}),
        ("回答short一点。", {"detail": "brief"}),
        ("請用繁體中文回答。", {"language": "zh"}),  # traditional characters
        ("能不能用中文回答？", {"language": "zh"}),  # 能不能 asks, it does not negate
        ("Could you always answer me in Japanese?", {"language": "ja"}),
        ("Reply in Chinese, briefly.", {"language": "zh", "detail": "brief"}),
        ("No need for long explanations, just keep it brief.", {"detail": "brief"}),
        ("Not too long, not too short.", {"detail": "normal"}),
        ("回答不要太长也不要太短。", {"detail": "normal"}),
        ("My English is not good, please use Chinese.", {"language": "zh"}),
        ("从今天起都用英文回答我", {"language": "en"}),  # "from today on" is standing, not "today"
    ],
)
def test_clear_standing_instructions_are_admitted_with_their_claims(evidence: str, claims: dict) -> None:
    result = rules(evidence, claims)
    assert result.ok, result.reason
    assert result.normalized_content == claims
    assert result.decision == {"rules": "admit", "uncertain": False, "judge": None}


@pytest.mark.parametrize(
    ("evidence", "claims", "why"),
    [
        ("I don't want short answers.", {"detail": "brief"}, "negated"),
        ("Please don't answer in English.", {"language": "en"}, "negated"),
        ("不要简短的回答。", {"detail": "brief"}, "negated"),
        ("Stop giving me long, detailed answers.", {"detail": "detailed"}, "negation carries over the comma"),
        ("Use English with me.", {"language": "zh"}, "claims a language the evidence does not state"),
        ("回答简短点。", {"detail": "brief", "language": "zh"}, "Chinese words do not state language=zh"),
        ("Answer briefly.", {"detail": "detailed"}, "claims another level"),
        ("I think the user likes detailed answers.", {"detail": "detailed"}, "not the user's words"),
        ("用户似乎更喜欢英文。", {"language": "en"}, "a guess about the user"),
        ("She prefers English.", {"language": "en"}, "someone else"),
        ("Maybe keep it short?", {"detail": "brief"}, "a guess"),
        ("Translate this sentence to English.", {"language": "en"}, "one-off: a task on this message"),
        ("Answer this one briefly.", {"detail": "brief"}, "one-off: scoped to the current question"),
        ("这次回答短一点。", {"detail": "brief"}, "one-off: this time"),
        ("Tell me about Paris in detail.", {"detail": "detailed"}, "one-off: asks for specific content"),
        ("给我讲讲量子力学，详细点。", {"detail": "detailed"}, "one-off: the detail belongs to this task"),
        ("How do you say hello in Japanese?", {"language": "ja"}, "a question about a word"),
        ("Do you speak Chinese?", {"language": "zh"}, "an ability question"),
        ("I love Chinese food.", {"language": "zh"}, "a language word about something else"),
        ("I speak English and Chinese.", {"language": "en"}, "a fact about the user, no instruction"),
        ("Thanks, that was helpful!", {"language": "en"}, "chit-chat"),
        ("English.", {"language": "en"}, "a bare language name directs nothing"),
    ],
)
def test_guesses_one_offs_chitchat_negations_and_unstated_claims_are_refused(
    evidence: str, claims: dict, why: str
) -> None:
    result = rules(evidence, claims)
    assert (result.ok, result.code) == (False, NOT_DURABLE_PREFERENCE), why
    assert result.reason and result.decision and result.decision["rules"] == "refuse"


def test_certain_refusals_are_not_marked_uncertain_and_hedges_are() -> None:
    assert rules("I don't want short answers.", {"detail": "brief"}).decision["uncertain"] is False
    assert rules("Use English with me.", {"language": "zh"}).decision["uncertain"] is False
    assert rules("I think I prefer short answers.", {"detail": "brief"}).decision["uncertain"] is True
    # a hedge never hides a claim the quote does not state: that refusal is certain
    hedged_wrong_claim = rules("I think I prefer Chinese.", {"language": "en"})
    assert hedged_wrong_claim.decision["uncertain"] is False


def test_refusals_name_the_failing_path() -> None:
    assert rules("Use English with me.", {"language": "zh"}).path == "/content/language"
    assert rules("Answer briefly.", {"detail": "detailed"}).path == "/content/detail"
    assert rules("Maybe keep it short?", {"detail": "brief"}).path == "/evidence"


# --- the generic checks every kind shares ------------------------------------------------------


def test_check_generic_passes_a_plain_statement_and_refuses_with_codes_and_paths() -> None:
    ok = check_generic(consent=True, source="Call me Sam.", evidence="Call me Sam.", content={"name": "Sam"})
    assert ok is None
    cases = [
        (dict(consent=False), NO_CONSENT, "/consent"),
        (dict(evidence="Call me Samuel."), EVIDENCE_NOT_IN_SOURCE, "/evidence"),
        (dict(content={"name": "sk-proj-abcdefghijklmnop1234567890"}), SECRET_DETECTED, "/content/name"),
        (dict(content={"a/b": [1, "sk-proj-abcdefghijklmnop1234567890"]}), SECRET_DETECTED, "/content/a~1b/1"),
        (dict(content={"n": {"sk-proj-abcdefghijklmnop1234567890": 1}}), SECRET_DETECTED, "/content/n"),  # not echoed
        (dict(source="Call me Sam. password: hunter2"), SECRET_DETECTED, "/source"),
        (dict(source="Maybe call me Sam?", evidence="Maybe call me Sam?"), NOT_DURABLE_PREFERENCE, "/evidence"),
        (
            dict(source="Just this once, call me Sam.", evidence="Just this once, call me Sam."),
            NOT_DURABLE_PREFERENCE,
            "/evidence",
        ),
        (
            dict(source="My wife likes to be called Sam.", evidence="My wife likes to be called Sam."),
            NOT_DURABLE_PREFERENCE,
            "/evidence",
        ),
        (dict(source="谢谢！", evidence="谢谢！"), NOT_DURABLE_PREFERENCE, "/evidence"),
    ]
    for changes, code, path in cases:
        proposal = {"consent": True, "source": "Call me Sam.", "evidence": "Call me Sam.", "content": {"name": "Sam"}}
        proposal.update(changes)
        refusal = check_generic(**proposal)
        assert refusal is not None and (refusal.ok, refusal.code, refusal.path) == (False, code, path), changes


@pytest.mark.parametrize(
    ("evidence", "value", "stated"),
    [
        ("I'm vegetarian.", "Vegetarian", True),
        ("I'm ＶＥＧＡＮ now.", "vegan", True),  # width and case folded
        ("I'm not vegetarian.", "vegetarian", False),
        ("我不吃辣。", "吃辣", False),
        ("叫我小王。", "小王", True),
        ("别叫我小王。", "小王", False),
        ("I use metric units.", "imperial", False),
        ("I'm a pescatarian.", "pescatarian", True),
    ],
)
def test_stated_in_folds_width_and_case_and_refuses_negated_values(evidence: str, value: str, stated: bool) -> None:
    assert stated_in(evidence, value) is stated


# --- through HTTP ------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("evidence", "claims"), ISSUE_PHRASINGS, ids=[e for e, _ in ISSUE_PHRASINGS])
def test_the_issue_phrasings_are_admitted_through_the_api_with_the_right_claims(alice, evidence, claims) -> None:
    source = f"Hi! {evidence} Thanks."
    body = {"kind": "preference", "content": claims, "evidence": evidence, "source": source, "consent": True}
    response = alice.post(memories_url(), body)
    assert response.status_code == 201, response.json()
    assert response.json()["content"] == claims
    assert LongTermMemory.objects.filter(memory_id=response.json()["id"], content=claims).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("evidence", "claims", "reason"),
    [
        ("I don't want short answers.", {"detail": "brief"}, "negation"),
        ("Use English with me.", {"language": "zh"}, "not_stated"),
        ("Translate this sentence to English.", {"language": "en"}, "one_off"),
        ("I think the user likes detailed answers.", {"detail": "detailed"}, "other_person"),
    ],
)
def test_negations_unstated_claims_one_offs_and_guesses_are_422_through_the_api(
    alice, evidence, claims, reason
) -> None:
    body = {"kind": "preference", "content": claims, "evidence": evidence, "source": evidence, "consent": True}
    error = assert_envelope(alice.post(memories_url(), body), 422, "rejected_by_policy")
    assert (error["details"]["reason"], error["details"]["code"]) == (reason, NOT_DURABLE_PREFERENCE)
    assert not LongTermMemory.objects.exists()
    assert AdmissionRefusal.objects.filter(code=NOT_DURABLE_PREFERENCE).count() == 1


def test_every_example_in_the_documentation_table_has_the_documented_outcome() -> None:
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "long-term-memories.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (.+?) \| `(.+?)` \| (.+?) \|$", doc, re.MULTILINE)
    assert len(rows) >= 20
    for evidence, claim, outcome in rows:
        content = dict(part.split(": ") for part in claim.split(", "))
        result = rules(evidence, content)
        if outcome == "admitted":
            assert result.ok and result.normalized_content == content, (evidence, result.reason)
        else:
            assert not result.ok and outcome.startswith(f"`{result.code}`"), (evidence, result)
