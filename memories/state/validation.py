"""The rules of conversation state: the scenario's "state" section and a candidate's shape (pure, no database).

A failing candidate is 422 `invalid_state_candidate` with `details.path` naming the first failing place
(e.g. "upsert[2].value") and `details.errors` listing every one found in that pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from memories.services.runonce import OPERATION_ID
from memories.validation import compact_json, json_depth
from memoryhub.errors import RejectedByPolicy
from memoryhub.identifiers import MAX_SAFE_INTEGER
from memoryhub.runtimes.registry import SectionInvalid
from memoryhub.wording import count

SECTION = "state"
CATEGORY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DEFAULT_MAX_RECORDS = 100
MAX_RECORDS_LIMIT = 1000
DEFAULT_MAX_TEXT_CHARS = 4000
MAX_TEXT_CHARS_LIMIT = 100_000
MAX_KEY_CHARS = 200
MAX_VALUE_BYTES = 8192
MAX_VALUE_DEPTH = 16
MAX_CHANGES = 500
CANDIDATE_FIELDS = ("scenarioId", "baseRevision", "text", "upsert", "delete", "operationId", "turnId")


class InvalidStateCandidate(RejectedByPolicy):
    """A state candidate failed validation: nothing was stored."""

    code = "invalid_state_candidate"

    def __init__(self, errors: list[tuple[str, str]]):
        path, message = errors[0]
        super().__init__(
            f"{path}: {message}",
            details={"path": path, "errors": [{"path": p, "message": m} for p, m in errors]},
        )


@dataclass(frozen=True)
class Category:
    name: str
    actor: bool = False
    max_records: int = DEFAULT_MAX_RECORDS
    description: str = ""


@dataclass(frozen=True)
class StateConfig:
    """A scenario's validated "state" section."""

    categories: tuple[Category, ...]
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS

    def category(self, name: str) -> Category | None:
        return next((c for c in self.categories if c.name == name), None)

    @property
    def actor_categories(self) -> list[str]:
        return [c.name for c in self.categories if c.actor]

    @classmethod
    def from_section(cls, section: dict) -> StateConfig:
        categories = tuple(
            Category(c["name"], c["actor"], c["maxRecords"], c.get("description", "")) for c in section["categories"]
        )
        return cls(categories, section["maxTextChars"])


@dataclass(frozen=True)
class Candidate:
    """A well-formed candidate (categories not yet checked against a scenario)."""

    scenario_id: str
    base_revision: int
    text: str | None = None
    upsert: tuple[dict, ...] = ()
    delete: tuple[tuple[str, str], ...] = ()
    operation_id: str | None = None
    turn_id: int | None = None  # the turn whose reply this candidate was derived from: rolled back with it


# --- the scenario section -------------------------------------------------------------------------------


def validate_state_section(value: object) -> dict:
    """`{"categories": [{"name", "actor", "maxRecords", "description"}], "maxTextChars"}`, defaults filled in."""
    errors: dict[str, str] = {}
    if not isinstance(value, dict):
        raise SectionInvalid({SECTION: "must be an object with categories and optional maxTextChars"})
    for key in sorted(set(value) - {"categories", "maxTextChars"}):
        errors[f"{SECTION}.{key}"] = "unknown field (allowed: categories, maxTextChars)"
    max_text = value.get("maxTextChars", DEFAULT_MAX_TEXT_CHARS)
    if not _is_int(max_text) or not 1 <= max_text <= MAX_TEXT_CHARS_LIMIT:
        errors[f"{SECTION}.maxTextChars"] = f"must be an integer between 1 and {MAX_TEXT_CHARS_LIMIT}"
    raw = value.get("categories")
    categories: list[dict] = []
    if not isinstance(raw, list) or not raw:
        errors[f"{SECTION}.categories"] = "required: a non-empty list of categories"
    else:
        seen: set[str] = set()
        for index, item in enumerate(raw):
            category = _category(f"{SECTION}.categories[{index}]", item, errors)
            if category is None:
                continue
            if category["name"] in seen:
                errors[f"{SECTION}.categories[{index}].name"] = f"category {category['name']!r} is declared twice"
            seen.add(category["name"])
            categories.append(category)
    if errors:
        raise SectionInvalid(errors)
    return {"categories": categories, "maxTextChars": max_text}


def _category(where: str, item: object, errors: dict[str, str]) -> dict | None:
    if not isinstance(item, dict):
        errors[where] = "must be an object with name, optional actor, maxRecords and description"
        return None
    before = len(errors)
    for key in sorted(set(item) - {"name", "actor", "maxRecords", "description"}):
        errors[f"{where}.{key}"] = "unknown field (allowed: name, actor, maxRecords, description)"
    name = item.get("name")
    if not isinstance(name, str) or not CATEGORY_NAME.fullmatch(name):
        errors[f"{where}.name"] = "required: 1-64 characters of A-Za-z0-9_.- starting with a letter or digit"
    actor = item.get("actor", False)
    if not isinstance(actor, bool):
        errors[f"{where}.actor"] = "must be a boolean"
    max_records = item.get("maxRecords", DEFAULT_MAX_RECORDS)
    if not _is_int(max_records) or not 1 <= max_records <= MAX_RECORDS_LIMIT:
        errors[f"{where}.maxRecords"] = f"must be an integer between 1 and {MAX_RECORDS_LIMIT}"
    description = item.get("description", "")
    if not isinstance(description, str) or len(description) > 500:
        errors[f"{where}.description"] = "must be a string of at most 500 characters"
    if len(errors) > before:
        return None
    out = {"name": name, "actor": actor, "maxRecords": max_records}
    if description:
        out["description"] = description
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- a candidate ----------------------------------------------------------------------------------------


def parse_candidate(body: object) -> Candidate:
    """The candidate's shape: every field's type, keys, value sizes, duplicates. Raises InvalidStateCandidate."""
    errors: list[tuple[str, str]] = []
    if not isinstance(body, dict):
        raise InvalidStateCandidate([("", "the body must be a JSON object")])
    for key in sorted(set(body) - set(CANDIDATE_FIELDS)):
        errors.append((key, f"unknown field (allowed: {', '.join(CANDIDATE_FIELDS)})"))
    scenario_id = body.get("scenarioId")
    if not isinstance(scenario_id, str) or not 1 <= len(scenario_id) <= 100:
        errors.append(("scenarioId", "required: the id of the scenario whose state section applies"))
    base = body.get("baseRevision")
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < MAX_SAFE_INTEGER:
        errors.append(("baseRevision", "required: the revision you read (0 before the first write)"))
    text = body.get("text")
    if "text" in body and not isinstance(text, str):
        errors.append(("text", "must be a string"))
    operation_id = body.get("operationId")
    if operation_id is not None and (not isinstance(operation_id, str) or not OPERATION_ID.fullmatch(operation_id)):
        errors.append(("operationId", "must be 1-128 characters of A-Za-z0-9_.:@-"))
    turn_id = body.get("turnId")
    if turn_id is not None and (
        not isinstance(turn_id, int) or isinstance(turn_id, bool) or not 0 < turn_id < MAX_SAFE_INTEGER
    ):
        errors.append(("turnId", "must be the id of a turn of this conversation"))
    upsert = _upserts(body.get("upsert", []), errors)
    delete = _deletes(body.get("delete", []), errors)
    upserted = {(r["category"], r["key"]): i for i, r in enumerate(upsert)}
    for index, pair in enumerate(delete):
        if pair in upserted:
            errors.append((f"delete[{index}]", f"{pair[0]}/{pair[1]} is also in upsert[{upserted[pair]}]"))
    if len(upsert) + len(delete) > MAX_CHANGES:
        errors.append(("upsert", f"at most {MAX_CHANGES} upserts and deletes together"))
    if errors:
        raise InvalidStateCandidate(errors)
    assert isinstance(scenario_id, str) and isinstance(base, int)
    return Candidate(
        scenario_id=scenario_id,
        base_revision=base,
        text=text if isinstance(text, str) else None,
        upsert=tuple(upsert),
        delete=tuple(delete),
        operation_id=operation_id,
        turn_id=turn_id,
    )


def _upserts(raw: object, errors: list[tuple[str, str]]) -> list[dict]:
    if not isinstance(raw, list):
        errors.append(("upsert", "must be a list of {category, key, value}"))
        return []
    out: list[dict] = []
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(raw):
        where = f"upsert[{index}]"
        if not isinstance(item, dict):
            errors.append((where, "must be an object {category, key, value}"))
            continue
        before = len(errors)
        for key in sorted(set(item) - {"category", "key", "value"}):
            errors.append((f"{where}.{key}", "unknown field (allowed: category, key, value)"))
        _pair(where, item, errors)
        if "value" not in item:
            errors.append((f"{where}.value", "required: any JSON value"))
        else:
            _value(f"{where}.value", item["value"], errors)
        if len(errors) > before:
            continue
        pair = (item["category"], item["key"])
        if pair in seen:
            errors.append((where, f"{pair[0]}/{pair[1]} is also upsert[{seen[pair]}]"))
            continue
        seen[pair] = index
        out.append({"category": item["category"], "key": item["key"], "value": item["value"]})
    return out


def _deletes(raw: object, errors: list[tuple[str, str]]) -> list[tuple[str, str]]:
    if not isinstance(raw, list):
        errors.append(("delete", "must be a list of {category, key}"))
        return []
    out: list[tuple[str, str]] = []
    for index, item in enumerate(raw):
        where = f"delete[{index}]"
        if not isinstance(item, dict):
            errors.append((where, "must be an object {category, key}"))
            continue
        before = len(errors)
        for key in sorted(set(item) - {"category", "key"}):
            errors.append((f"{where}.{key}", "unknown field (allowed: category, key)"))
        _pair(where, item, errors)
        if len(errors) == before and (item["category"], item["key"]) not in out:
            out.append((item["category"], item["key"]))
    return out


def _pair(where: str, item: dict, errors: list[tuple[str, str]]) -> None:
    if not isinstance(item.get("category"), str) or not CATEGORY_NAME.fullmatch(item["category"]):
        errors.append((f"{where}.category", "required: a category name"))
    key = item.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS:
        errors.append((f"{where}.key", f"required: a non-empty string of at most {MAX_KEY_CHARS} characters"))


def _value(where: str, value: object, errors: list[tuple[str, str]]) -> None:
    if json_depth(value) > MAX_VALUE_DEPTH:
        errors.append((where, f"nested deeper than {MAX_VALUE_DEPTH} levels"))
        return
    size = len(compact_json(value).encode())
    if size > MAX_VALUE_BYTES:
        errors.append((where, f"{size} bytes as compact JSON; the limit is {MAX_VALUE_BYTES} (8 KiB)"))


def check_against_config(candidate: Candidate, config: StateConfig) -> None:
    """Categories declared by the scenario, and the text's length. Raises InvalidStateCandidate."""
    errors: list[tuple[str, str]] = []
    if candidate.text is not None and len(candidate.text) > config.max_text_chars:
        errors.append(("text", f"{len(candidate.text)} characters; the scenario allows {config.max_text_chars}"))
    declared = ", ".join(c.name for c in config.categories)
    for index, record in enumerate(candidate.upsert):
        if config.category(record["category"]) is None:
            errors.append((f"upsert[{index}].category", f"unknown category; the scenario declares: {declared}"))
    for index, (category, _key) in enumerate(candidate.delete):
        if config.category(category) is None:
            errors.append((f"delete[{index}].category", f"unknown category; the scenario declares: {declared}"))
    if errors:
        raise InvalidStateCandidate(errors)


def check_record_counts(candidate: Candidate, config: StateConfig, before: list[dict]) -> None:
    """After applying the candidate to `before`, no category may hold more than its maxRecords; the path names the
    first upsert that adds a record over the limit."""
    deleted = set(candidate.delete)
    existing = {(r["category"], r["key"]) for r in before} - deleted
    counts: dict[str, int] = {}
    for category, _key in existing:
        counts[category] = counts.get(category, 0) + 1
    for index, record in enumerate(candidate.upsert):
        category = config.category(record["category"])
        if category is None or (record["category"], record["key"]) in existing:
            continue
        counts[category.name] = counts.get(category.name, 0) + 1
        if counts[category.name] > category.max_records:
            total = counts[category.name] + sum(
                1
                for r in candidate.upsert[index + 1 :]
                if r["category"] == category.name and (r["category"], r["key"]) not in existing
            )
            raise InvalidStateCandidate(
                [
                    (
                        f"upsert[{index}]",
                        f"category {category.name!r} would hold {count(total, 'record')}; its maxRecords is "
                        f"{category.max_records}",
                    )
                ]
            )


def validate_records(records: object) -> list[dict]:
    """A whole records list (the admin's edit): [{category, key, value}], each checked like an upsert."""
    errors: list[tuple[str, str]] = []
    clean = _upserts(records, errors)
    if errors:
        raise InvalidStateCandidate([("records" + path[len("upsert") :], message) for path, message in errors])
    return clean


# --- an operator's edit ---------------------------------------------------------------------------------

_ABSENT = object()
_UPSERT_PATH = re.compile(r"upsert\[(\d+)\]")


@dataclass(frozen=True)
class Edit:
    """An operator's whole-state edit as the candidate it amounts to; upsert i is record `positions[i]`."""

    candidate: Candidate
    positions: tuple[int, ...]


def edit_as_candidate(
    *, scenario_id: str, base_revision: int, text: str, records: list[dict], before_text: str, before: list[dict]
) -> Edit:
    """The text only if changed, the records added or changed as upserts, the records left out as deletes."""
    current = {(r["category"], r["key"]): r["value"] for r in before}
    positions = tuple(i for i, r in enumerate(records) if current.get((r["category"], r["key"]), _ABSENT) != r["value"])
    wanted = {(r["category"], r["key"]) for r in records}
    candidate = Candidate(
        scenario_id=scenario_id,
        base_revision=base_revision,
        text=None if text == before_text else text,
        upsert=tuple(records[i] for i in positions),
        delete=tuple(pair for pair in current if pair not in wanted),
    )
    return Edit(candidate, positions)


def check_edit(edit: Edit, config: StateConfig, before: list[dict]) -> None:
    """The API's checks of the candidate against the scenario, each error named by its place in the records.

    One difference: removing a record of a category the scenario does not declare is allowed (the API refuses
    such a delete), so an operator can repair a state whose scenario dropped the category.
    """
    try:
        check_against_config(replace(edit.candidate, delete=()), config)
        check_record_counts(edit.candidate, config, before)
    except InvalidStateCandidate as exc:
        errors = [(_record_path(e["path"], edit.positions), e["message"]) for e in exc.details["errors"]]
        raise InvalidStateCandidate(errors) from None


def _record_path(path: str, positions: tuple[int, ...]) -> str:
    match = _UPSERT_PATH.match(path)
    return f"records[{positions[int(match[1])]}]{path[match.end() :]}" if match else path
