"""Refusal codes and the outcome types shared by every part of admission."""

from __future__ import annotations

from dataclasses import dataclass

NO_CONSENT = "no_consent"
EVIDENCE_NOT_IN_SOURCE = "evidence_not_in_source"
SECRET_DETECTED = "secret_detected"
INVALID_CONTENT = "invalid_content"
NOT_DURABLE_PREFERENCE = "not_durable_preference"
UNKNOWN_KIND = "unknown_kind"
REFUSAL_CODES = frozenset(
    {NO_CONSENT, EVIDENCE_NOT_IN_SOURCE, SECRET_DETECTED, INVALID_CONTENT, NOT_DURABLE_PREFERENCE, UNKNOWN_KIND}
)

# Why a quote is not a durable preference: the named reason under `not_durable_preference`, reported in
# the API error's `details.reason` and in the refusal log (docs/long-term-memories.md, "Refusal reasons").
HEDGE = "hedge"  # a guess or a hedge: "maybe", "I think", "可能", "好像"
ONE_OFF = "one_off"  # scoped to the current message or task: "this time", "translate this", "这次"
QUESTION = "question"  # asks rather than states: "Do you speak Chinese?", "你会说英文吗？"
NEGATION = "negation"  # the claimed value is negated: "Don't answer in English", "别用中文"
OTHER_PERSON = "other_person"  # someone else's preference: "My wife prefers Chinese", "用户喜欢…"
PAST = "past"  # no longer holds: "I used to want long answers", "以前我喜欢…"
HYPOTHETICAL = "hypothetical"  # counterfactual: "If I were a beginner, I'd want…", "假如我是…"
TEMPORARY = "temporary"  # a bounded period: "today", "this session", "for now", "这周", "暂时"
NO_STATEMENT = "no_statement"  # chit-chat or words that state no preference about answering
NOT_STATED = "not_stated"  # the quote does not mention a claimed field's value at all
REFUSAL_REASONS = frozenset(
    {HEDGE, ONE_OFF, QUESTION, NEGATION, OTHER_PERSON, PAST, HYPOTHETICAL, TEMPORARY, NO_STATEMENT, NOT_STATED}
)


@dataclass(frozen=True)
class Admission:
    """The verdict on a proposed memory.

    `path` is the JSON pointer of what failed ("/consent", "/evidence", "/content/language", …).
    `decision` records how it was decided: {"rules": "admit"|"refuse", "uncertain": bool, "judge": …}
    (`judge` is None unless the rules were uncertain and a judge is configured; see admission.judge).
    `cause` is the named refusal reason (REFUSAL_REASONS) of a `not_durable_preference` refusal; the API
    reports `cause or code` in `details.reason`.
    """

    ok: bool
    reason: str | None = None
    code: str | None = None
    normalized_content: dict | None = None
    path: str | None = None
    decision: dict | None = None
    cause: str | None = None

    @property
    def details_reason(self) -> str | None:
        """What `details.reason` of the 422 says: the named reason, else the code."""
        return self.cause or self.code


class Refused(Exception):
    """Raised by kind rules to refuse a write with a code and a human-readable reason.

    `uncertain` marks a refusal the rules are not sure of: only those are sent to the judge.
    """

    def __init__(
        self, code: str, reason: str, *, path: str | None = None, uncertain: bool = False, cause: str | None = None
    ):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.path = path
        self.uncertain = uncertain
        self.cause = cause
