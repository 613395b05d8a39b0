"""Product-defined memory kinds: their definition rules and how a memory of such a kind is admitted.

A product defines a kind with a JSON Schema for `content` (properties marked `"x-single-valued": true`
have one current answer per user), `statedFields` (content fields whose values the evidence must
state), `searchable`, `textField`, `maxPerUser`, `defaultTtlDays` and `evidencePolicy`. A write of such
a kind passes the checks its evidence policy names — "statement": consent, verbatim evidence, secrets and
the statement rules made for preferences (guesses, one-off requests, chit-chat, the past, someone else's
words); "quote": consent, verbatim evidence and secrets only, for facts drawn from a conversation — then
the schema, then the stated fields; each refusal names its code and the failing JSON pointer (`path`).

Pure Python, no Django: services call it with the stored definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memories.longterm import admission
from memories.schemas import SchemaRefused, SchemaUnusable, check_user_schema, schema_errors

KIND_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
BUILTIN_KINDS = frozenset({"preference"})
# The built-in kind's fields with one current answer per user.
BUILTIN_SINGLE_VALUED: Mapping[str, tuple[str, ...]] = {"preference": ("language", "detail")}
SINGLE_VALUED = "x-single-valued"
MAX_SCHEMA_BYTES = 16_384
# maxPerUser and defaultTtlDays: null (no limit, no expiry) or an integer in these bounds (API and admin alike).
LIMITS: Mapping[str, tuple[int, int]] = {"maxPerUser": (1, 100_000), "defaultTtlDays": (1, 36_500)}
# How a product kind's evidence is judged: "statement" (the default) applies the statement rules made for
# preferences; "quote" only the checks no kind may skip (consent, a verbatim quote, no secret).
STATEMENT = "statement"
QUOTE = "quote"
EVIDENCE_POLICIES = (STATEMENT, QUOTE)

SCHEMA_VIOLATION = "schema_violation"
NOT_STATED = "not_stated"
UNKNOWN_KIND = admission.UNKNOWN_KIND


class DefinitionInvalid(Exception):
    """A kind definition that cannot be stored; `field` is the API field at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class KindSpec:
    """What the services need to know about a kind, built-in or product-defined."""

    name: str
    searchable: bool
    single_valued: tuple[str, ...] = ()
    text_field: str = "text"
    max_per_user: int | None = None
    default_ttl_days: int | None = None
    content_schema: dict | None = None  # None: a built-in kind, admitted by admission.admit
    stated_fields: tuple[str, ...] = ()
    definition_id: int | None = None
    description: str = ""
    evidence_policy: str = STATEMENT
    extra: dict = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        return self.content_schema is None


def builtin_spec(name: str) -> KindSpec | None:
    rules = admission.KINDS.get(name)
    if rules is None:
        return None
    return KindSpec(name, rules.searchable, BUILTIN_SINGLE_VALUED.get(name, ()))


def reserved(name: str) -> bool:
    return name in BUILTIN_KINDS or name in admission.KINDS


def single_valued_of(schema: object) -> tuple[str, ...]:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return ()
    return tuple(sorted(k for k, v in properties.items() if isinstance(v, dict) and v.get(SINGLE_VALUED) is True))


# ---------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------


def check_name(name: object) -> str:
    if not isinstance(name, str) or not KIND_NAME.fullmatch(name):
        raise DefinitionInvalid("name", "must be 1-64 characters of a-z, 0-9 and _, starting with a letter")
    if reserved(name):
        raise DefinitionInvalid("name", f"{name!r} is a built-in kind")
    return name


def check_definition(data: Mapping[str, object]) -> None:
    """Check a complete definition (after a PATCH is merged): the schema, and the fields it names."""
    schema = data["contentSchema"]
    if not isinstance(schema, dict):
        raise DefinitionInvalid("contentSchema", "must be a JSON Schema object")
    try:
        check_user_schema(schema, max_bytes=MAX_SCHEMA_BYTES)  # the rules every user-supplied schema follows
    except SchemaRefused as exc:
        raise DefinitionInvalid("contentSchema", exc.message) from None
    if schema.get("type") != "object":
        raise DefinitionInvalid("contentSchema", 'must describe an object ("type": "object")')
    raw_properties = schema.get("properties")
    properties: dict = raw_properties if isinstance(raw_properties, dict) else {}
    for name, spec in properties.items():
        if isinstance(spec, dict) and SINGLE_VALUED in spec and not isinstance(spec[SINGLE_VALUED], bool):
            raise DefinitionInvalid("contentSchema", f"properties.{name}.{SINGLE_VALUED} must be a boolean")
    stated = data.get("statedFields") or []
    if not isinstance(stated, list) or not all(isinstance(s, str) for s in stated) or len(set(stated)) != len(stated):
        raise DefinitionInvalid("statedFields", "must be a list of distinct property names")
    for name in stated:
        if name not in properties:
            raise DefinitionInvalid("statedFields", f"{name!r} is not a property of contentSchema")
    text_field = data.get("textField") or ""
    if text_field and text_field not in properties:
        raise DefinitionInvalid("textField", f"{text_field!r} is not a property of contentSchema")
    if data.get("evidencePolicy", STATEMENT) not in EVIDENCE_POLICIES:
        raise DefinitionInvalid("evidencePolicy", f"must be one of {', '.join(map(repr, EVIDENCE_POLICIES))}")
    check_limits(data)


def check_limits(data: Mapping[str, object]) -> None:
    """maxPerUser and defaultTtlDays: null or an integer in LIMITS (0 would silently mean "none")."""
    for name, (low, high) in LIMITS.items():
        value = data.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high):
            raise DefinitionInvalid(name, f"must be an integer between {low} and {high}")


# ---------------------------------------------------------------------------------------------
# Admission of a memory of a product-defined kind
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindAdmission:
    ok: bool
    code: str | None = None
    reason: str | None = None
    path: str | None = None
    content: dict | None = None
    decision: dict | None = None  # how the generic checks decided (admission.Admission.decision)
    cause: str | None = None  # the named reason of a not_durable_preference refusal (admission.REFUSAL_REASONS)


def _refuse(code: str, reason: str, path: str) -> KindAdmission:
    return KindAdmission(False, code, reason, path)


def _generic(
    spec: KindSpec, *, consent: object, source: object, evidence: object, content: object
) -> KindAdmission | None:
    """The checks the kind's evidence policy names: "quote" stops at consent, verbatim evidence and secrets."""
    check = admission.check_proposal if spec.evidence_policy == QUOTE else admission.check_generic
    result = check(consent=consent, source=source, evidence=evidence, content=content)
    if result is None or result.ok:
        return None
    return KindAdmission(
        False,
        result.code,
        result.reason,
        result.path or "/evidence",
        decision={**(result.decision or {}), "policy": spec.evidence_policy},
        cause=result.cause,
    )


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _stated_values(value: object) -> list[str] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (str, int, float)):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return [str(v) for v in value]
    return None


def schema_refusal(spec: KindSpec, content: object) -> KindAdmission | None:
    """The refusal when content fails a product kind's schema (or the schema cannot judge it), else None."""
    assert spec.content_schema is not None
    try:
        errors = sorted(schema_errors(spec.content_schema, content), key=lambda e: [str(p) for p in e.absolute_path])
    except SchemaUnusable as exc:  # e.g. a schema stored before the save-time rules: it cannot judge content
        return _refuse(SCHEMA_VIOLATION, f"the kind's schema cannot be applied: {exc}", "/content")
    if errors:
        error = errors[0]
        path = "/content" + "".join(f"/{_escape(str(p))}" for p in error.absolute_path)
        return _refuse(SCHEMA_VIOLATION, f"content fails the kind's schema at {path}: {error.message}", path)
    return None


def admit_product_kind(
    spec: KindSpec, *, consent: object, source: object, evidence: object, content: object
) -> KindAdmission:
    refusal = _generic(spec, consent=consent, source=source, evidence=evidence, content=content)
    if refusal is not None:
        return refusal
    assert isinstance(evidence, str)
    refusal = schema_refusal(spec, content)
    if refusal is not None:
        return refusal
    assert isinstance(content, dict)  # the schema describes an object
    for name in spec.stated_fields:
        if name not in content:
            continue
        path = f"/content/{_escape(name)}"
        values = _stated_values(content[name])
        if values is None:
            return _refuse(NOT_STATED, f"{name} must be a string, a number or a list of them to be stated", path)
        for value in values:
            # Unicode width (NFKC) and case folded, and not negated there ("not vegan" states no "vegan").
            if not admission.stated_in(evidence, value):
                return _refuse(NOT_STATED, f"the evidence does not state {name} = {value!r}", path)
    decision = {"rules": "admit", "uncertain": False, "judge": None, "policy": spec.evidence_policy}
    return KindAdmission(True, content=content, decision=decision)


def contradicts(old: Mapping[str, object], new: Mapping[str, object], fields: tuple[str, ...]) -> bool:
    """Does `new` give another answer than `old` to one of the single-valued fields both answer?"""
    return any(name in old and name in new and old[name] != new[name] for name in fields)
