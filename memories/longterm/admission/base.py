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


@dataclass(frozen=True)
class Admission:
    """The verdict on a proposed memory.

    `path` is the JSON pointer of what failed ("/consent", "/evidence", "/content/language", …).
    `decision` records how it was decided: {"rules": "admit"|"refuse", "uncertain": bool, "judge": …}
    (`judge` is None unless the rules were uncertain and a judge is configured; see admission.judge).
    """

    ok: bool
    reason: str | None = None
    code: str | None = None
    normalized_content: dict | None = None
    path: str | None = None
    decision: dict | None = None


class Refused(Exception):
    """Raised by kind rules to refuse a write with a code and a human-readable reason.

    `uncertain` marks a refusal the rules are not sure of: only those are sent to the judge.
    """

    def __init__(self, code: str, reason: str, *, path: str | None = None, uncertain: bool = False):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.path = path
        self.uncertain = uncertain
