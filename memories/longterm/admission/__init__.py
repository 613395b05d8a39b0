"""Admission rules for long-term memories (docs/long-term-memories.md, "Admission rules").

A model only *proposes* a memory; whether it is saved is decided here, from facts the model cannot
forge: `consent` comes from the trusted product backend, `evidence` must be a verbatim quote of the
`source` the user wrote, and the evidence itself must state every claimed field. Passwords, keys,
card and ID numbers, chit-chat, guesses and one-off requests are refused with a distinct code.

The rules judge what the quote means, not which cue words it contains (statements.py, preference.py),
offline and deterministically. When they are unsure, and only then, an optional model judge
(judge.py, ADMISSION_JUDGE_URL) gives a second opinion; its answer is recorded in `Admission.decision`.

The package is pure Python (the judge reads Django settings lazily): the API layer maps a refusal to
422 `rejected_by_policy` with the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from . import judge as _judge
from . import statements
from .base import (
    EVIDENCE_NOT_IN_SOURCE,
    INVALID_CONTENT,
    NO_CONSENT,
    NOT_DURABLE_PREFERENCE,
    REFUSAL_CODES,
    REFUSAL_REASONS,
    SECRET_DETECTED,
    UNKNOWN_KIND,
    Admission,
    Refused,
)
from .preference import MAX_TEXT_CHARS, check_preference_evidence, normalize_language, normalize_preference
from .secrets import (
    SecretFinding,
    cn_resident_id_valid,
    contains_secret,
    find_secrets,
    luhn_valid,
    pointed_texts,
)

# =============================================================================================
# Kind registry
# =============================================================================================


@dataclass(frozen=True)
class KindRules:
    """How a kind is admitted.

    normalize(content) -> normalized dict; raise ValueError (→ invalid_content) or Refused.
    check_evidence(evidence, normalized) -> None; raise Refused when the quote does not support it.
    """

    normalize: Callable[[object], dict]
    check_evidence: Callable[[str, dict], None]
    searchable: bool = False


_KINDS: dict[str, KindRules] = {}
KINDS: Mapping[str, KindRules] = MappingProxyType(_KINDS)
_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def register_kind(name: str, rules: KindRules, *, replace: bool = False) -> None:
    if not _KIND_NAME.match(name):
        raise ValueError(f"invalid kind name {name!r}")
    if name in _KINDS and not replace:
        raise ValueError(f"kind {name!r} is already registered")
    _KINDS[name] = rules


def get_kind(name: str) -> KindRules:
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown memory kind {name!r}") from None


PREFERENCE = KindRules(normalize=normalize_preference, check_evidence=check_preference_evidence, searchable=True)
register_kind("preference", PREFERENCE)


# =============================================================================================
# admit(), check_generic(), stated_in()
# =============================================================================================


def _refuse(
    code: str, reason: str, path: str | None = None, *, uncertain: bool = False, cause: str | None = None
) -> Admission:
    decision = {"rules": "refuse", "uncertain": uncertain, "judge": None, **({"reason": cause} if cause else {})}
    return Admission(ok=False, reason=reason, code=code, path=path, decision=decision, cause=cause)


def _refused(refused: Refused, path: str | None = None) -> Admission:
    return _refuse(refused.code, refused.reason, refused.path or path, uncertain=refused.uncertain, cause=refused.cause)


def _secret_in(source: str, evidence: str, content: object) -> tuple[str, str] | None:
    """(what was found, the JSON Pointer of the string holding it), or None; the secret itself is never echoed."""
    texts = [("/source", source), ("/evidence", evidence), *pointed_texts(content, "/content")]
    for pointer, text in texts:
        findings = find_secrets(text)
        if findings:
            label = pointer.split("/")[1]
            return f"{findings[0].kind} detected in {label}", pointer
    return None


def check_proposal(consent: object, source: object, evidence: object, content: object) -> Admission | None:
    """Consent, verbatim evidence and secrets: the checks that no judge may overturn."""
    if consent is not True:  # only an explicit boolean from the trusted backend counts
        return _refuse(
            NO_CONSENT, "saving a memory needs consent: true from the product; the model cannot grant it", "/consent"
        )
    if not isinstance(evidence, str) or not evidence.strip():
        return _refuse(EVIDENCE_NOT_IN_SOURCE, "evidence must be a non-empty verbatim quote of the source", "/evidence")
    if not isinstance(source, str) or evidence not in source:
        return _refuse(EVIDENCE_NOT_IN_SOURCE, "evidence does not occur verbatim in the source", "/evidence")
    secret = _secret_in(source, evidence, content)
    if secret:
        return _refuse(SECRET_DETECTED, f"secrets are never saved: {secret[0]}", secret[1])
    return None


def check_generic(*, consent: object, source: object, evidence: object, content: object) -> Admission | None:
    """The checks every kind shares: consent, verbatim evidence, secrets (source, evidence, content), and
    chit-chat / guesses / someone else's words / one-off requests. None when all pass, else the refusal."""
    refusal = check_proposal(consent, source, evidence, content)
    if refusal is not None:
        return refusal
    assert isinstance(evidence, str)
    try:
        statements.check_statement(evidence)
    except Refused as refused:
        return _refused(refused)
    return None


def stated_in(evidence: str, value: str) -> bool:
    """Does the evidence state `value` (after NFKC width folding and case folding), not negated?

    "I'm vegetarian" states "Vegetarian"; "I'm not vegetarian" and "别叫我小王" do not.
    """
    needle = " ".join(statements.normalize_text(value).casefold().split())
    if not needle:
        return False
    reading = statements.read(" ".join(evidence.split()))
    pattern = re.compile(statements.ascii_word(re.escape(needle)) if needle.isascii() else re.escape(needle))
    return any(not mention.negated for mention in reading.mentions(pattern))


def admit(
    kind: str,
    *,
    consent: object,
    source: object,
    evidence: object,
    content: object,
    judge: _judge.Judge | None | object = _judge.CONFIGURED,
) -> Admission:
    """Decide whether a proposed long-term memory may be saved; see the module docstring.

    `judge`: by default the judge configured in settings (none unless ADMISSION_JUDGE_URL is set);
    None for the rules alone. The judge is asked only when the rules refuse and are uncertain.
    """
    rules = _KINDS.get(kind) if isinstance(kind, str) else None
    if rules is None:
        return _refuse(UNKNOWN_KIND, f"unknown memory kind {kind!r}", "/kind")
    refusal = check_proposal(consent, source, evidence, content)
    if refusal is not None:
        return refusal
    assert isinstance(evidence, str)
    try:
        normalized = rules.normalize(content)
    except Refused as refused:
        return _refused(refused, "/content")
    except ValueError as exc:
        return _refuse(INVALID_CONTENT, str(exc), "/content")
    try:
        rules.check_evidence(evidence, normalized)
    except Refused as refused:
        verdict = _refused(refused)
        if refused.uncertain:
            return _second_opinion(judge, kind, evidence, normalized, verdict)
        return verdict
    return Admission(
        ok=True, normalized_content=normalized, decision={"rules": "admit", "uncertain": False, "judge": None}
    )


def _second_opinion(judge: object, kind: str, evidence: str, normalized: dict, verdict: Admission) -> Admission:
    chosen = _judge.configured() if judge is _judge.CONFIGURED else judge
    if not isinstance(chosen, _judge.Judge):
        return verdict
    opinion = chosen.opinion(kind=kind, evidence=evidence, content=normalized, rules_reason=verdict.reason or "")
    decision = {**(verdict.decision or {}), "judge": opinion.record()}
    if opinion.verdict == "admit":
        return Admission(ok=True, normalized_content=normalized, decision=decision)
    return replace(verdict, decision=decision)  # refused by the judge, or its failure: the rules' verdict


__all__ = [
    "EVIDENCE_NOT_IN_SOURCE",
    "INVALID_CONTENT",
    "KINDS",
    "MAX_TEXT_CHARS",
    "NOT_DURABLE_PREFERENCE",
    "NO_CONSENT",
    "PREFERENCE",
    "REFUSAL_CODES",
    "REFUSAL_REASONS",
    "SECRET_DETECTED",
    "UNKNOWN_KIND",
    "Admission",
    "KindRules",
    "Refused",
    "SecretFinding",
    "admit",
    "check_generic",
    "check_proposal",
    "cn_resident_id_valid",
    "contains_secret",
    "find_secrets",
    "get_kind",
    "luhn_valid",
    "normalize_language",
    "register_kind",
    "stated_in",
]
