"""User-supplied JSON Schemas (a product's or scenario's memorySchema, a kind's contentSchema): one check when
a schema is saved, one validator when a value is checked against it.

Products write these schemas, and models write the values (update_memory), so neither may cost the server
more than a bounded amount of CPU:
- every regular expression (`pattern`, `patternProperties`, and the `additionalProperties` that consults
  them) runs on RE2, which matches in linear time; a pattern RE2 cannot run (backreferences, lookaround) or
  one too large is refused when the schema is saved, naming its JSON pointer;
- a string longer than MAX_MATCHED_CHARS is never handed to a pattern (it fails the pattern instead), and one
  check spends at most MAX_PATTERN_WORK units (program size x characters) in RE2;
- one check evaluates at most MAX_SCHEMA_STEPS keywords within MAX_SCHEMA_SECONDS: anyOf/oneOf over nested
  values is otherwise exponential in the value's depth;
- `$ref` must be a JSON pointer into the schema itself ("#" or "#/…") that resolves, and references may not
  loop back without descending into the value (or fan out past MAX_IN_PLACE_SUBSCHEMAS per value);
- only draft 2020-12 is spoken: `$schema` naming another dialect, nested `$id`, `$dynamicRef` and
  `$recursiveRef` are refused (they would switch jsonschema to another validator or base URI).
Pure Python, no Django: the longterm kinds call it too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError

from memories.validation import json_depth
from memoryhub.errors import InvalidRequest, RejectedByPolicy

MAX_PATTERN_CHARS = 1000
MAX_PROGRAM_SIZE = 10_000  # RE2's compiled size; e.g. "^[a-z]+$" is 4, "[a-z]{1,1000}" 2,003
MAX_MATCHED_CHARS = 10_000
MAX_PATTERN_WORK = 50_000_000  # program size x characters per check: about 0.5 s for the worst patterns
MAX_SCHEMA_STEPS = 100_000  # keyword evaluations per check: a 64 KB document with a plain schema needs a few thousand
MAX_SCHEMA_SECONDS = 2  # and at most this long, whatever the steps cost
MAX_SCHEMA_DEPTH = 32
MAX_SCHEMA_BYTES = 65_536
MAX_IN_PLACE_SUBSCHEMAS = 1000
MAX_IN_PLACE_DEPTH = 100
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Draft 2020-12 keywords holding subschemas: applied to the same value (in place) or to a part of it.
IN_PLACE_ONE = ("not", "if", "then", "else")
IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
IN_PLACE_MAP = ("dependentSchemas",)
CHILD_ONE = ("items", "contains", "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties")
CHILD_LIST = ("prefixItems",)
CHILD_MAP = ("properties", "patternProperties")
DEFINITIONS = ("$defs", "definitions")
REFUSED_KEYWORDS = ("$dynamicRef", "$recursiveRef")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported to the caller, not to stderr


def _is_re2_regex(instance: object) -> bool:
    if isinstance(instance, str):
        re2.compile(instance, _OPTIONS)
    return True


# The metaschema's formats, with "regex" meaning what the patterns will run on (RE2, so \p{L} is fine).
_FORMATS = FormatChecker(formats=())
_FORMATS.checkers = {**Draft202012Validator.FORMAT_CHECKER.checkers}
_FORMATS.checks("regex", raises=re2.error)(_is_re2_regex)


class SchemaRefused(Exception):
    """A schema that cannot be saved; `path` is the JSON pointer of the offending place."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{message} (at {path or '/'})")
        self.path = path or "/"
        self.message = f"{message} (at {self.path})"


class SchemaUnusable(Exception):
    """A stored schema that cannot judge this value (saved before these rules, or too costly for it)."""


# ----------------------------------------------------------------------------------------- saving


def check_user_schema(schema: object, *, max_bytes: int = MAX_SCHEMA_BYTES) -> None:
    """Refuse, naming the JSON pointer, any schema the validator below could not run in bounded time."""
    if not isinstance(schema, dict):
        raise SchemaRefused("/", "must be a JSON Schema object")
    if len(json.dumps(schema, ensure_ascii=False).encode()) > max_bytes:
        raise SchemaRefused("/", f"larger than {max_bytes} bytes")
    if json_depth(schema) > MAX_SCHEMA_DEPTH:
        raise SchemaRefused("/", f"nested deeper than {MAX_SCHEMA_DEPTH} levels")
    graph = _Graph(schema)
    graph.walk()  # first: its messages say why a pattern or a $ref is refused
    try:
        Draft202012Validator.check_schema(schema, format_checker=_FORMATS)
    except SchemaError as exc:
        raise SchemaRefused(_pointer(exc.absolute_path), f"invalid JSON Schema: {exc.message}") from None
    graph.check_loops()


@dataclass
class _Node:
    in_place: list[str]  # pointers of the subschemas applied to the same value, $ref targets included


class _Graph:
    """Every subschema reachable from the root (through keywords and $ref), checked as it is reached."""

    def __init__(self, root: dict):
        self.root = root
        self.nodes: dict[str, _Node] = {}
        self.has_pattern_properties = False
        self.has_unevaluated_properties = False

    def walk(self) -> None:
        todo = [""]
        while todo:
            pointer = todo.pop()
            if pointer in self.nodes:
                continue
            node = _resolve(self.root, pointer)
            self.nodes[pointer] = _Node([])
            if isinstance(node, dict):
                todo.extend(self._visit(pointer, node))
        if self.has_pattern_properties and self.has_unevaluated_properties:
            # jsonschema finds the properties unevaluatedProperties skips with Python's re: no RE2 there.
            raise SchemaRefused("/", "unevaluatedProperties cannot be combined with patternProperties")

    def _visit(self, pointer: str, node: dict) -> list[str]:
        self._check_keywords(pointer, node)
        edges = self.nodes[pointer].in_place
        children: list[str] = []
        edges.extend(_subschemas(pointer, node, IN_PLACE_ONE, IN_PLACE_LIST, IN_PLACE_MAP))
        children.extend(edges)
        children.extend(_subschemas(pointer, node, CHILD_ONE, CHILD_LIST, CHILD_MAP + DEFINITIONS))
        if "$ref" in node:
            target = self._ref_target(pointer, node["$ref"])
            edges.append(target)
            children.append(target)
        for regex_pointer, regex in _patterns(pointer, node):
            _check_pattern(regex_pointer, regex)
        return children

    def _check_keywords(self, pointer: str, node: dict) -> None:
        for keyword in REFUSED_KEYWORDS:
            if keyword in node:
                raise SchemaRefused(f"{pointer}/{keyword}", f"{keyword} is not supported; use $ref")
        if "$id" in node and pointer:
            raise SchemaRefused(f"{pointer}/$id", "$id is allowed only at the root")
        if "$schema" in node and node["$schema"] != DIALECT:
            raise SchemaRefused(f"{pointer}/$schema", f"only {DIALECT} is supported")
        self.has_pattern_properties |= "patternProperties" in node
        self.has_unevaluated_properties |= "unevaluatedProperties" in node

    def _ref_target(self, pointer: str, ref: object) -> str:
        where = f"{pointer}/$ref"
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise SchemaRefused(where, 'only local references ($ref "#" or "#/…" within this schema) are allowed')
        target = unquote(ref[1:])
        if _resolve(self.root, target) is _MISSING:
            raise SchemaRefused(where, f"$ref {ref!r} does not resolve within this schema")
        if not isinstance(_resolve(self.root, target), (dict, bool)):
            raise SchemaRefused(where, f"$ref {ref!r} names a value that is not a schema")
        return target

    def check_loops(self) -> None:
        """A cycle of in-place subschemas never ends (RecursionError); a wide fan-out is exponential."""
        sizes: dict[str, int] = {}
        active: set[str] = set()

        def size(pointer: str) -> int:
            if pointer in sizes:
                return sizes[pointer]
            if pointer in active:
                raise SchemaRefused(pointer or "/", "$ref loops back to itself without descending into the value")
            if len(active) >= MAX_IN_PLACE_DEPTH:
                raise SchemaRefused(pointer or "/", f"$ref chains deeper than {MAX_IN_PLACE_DEPTH}")
            active.add(pointer)
            total = 1 + sum(size(edge) for edge in self.nodes[pointer].in_place)
            active.discard(pointer)
            if total > MAX_IN_PLACE_SUBSCHEMAS:
                limit = MAX_IN_PLACE_SUBSCHEMAS
                raise SchemaRefused(pointer or "/", f"applies more than {limit} subschemas to a value")
            sizes[pointer] = total
            return total

        for pointer in list(self.nodes):
            size(pointer)


_MISSING = object()


def _resolve(root: object, pointer: str) -> object:
    node = root
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def _escape(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def _pointer(parts) -> str:
    return "".join(f"/{_escape(p)}" for p in parts) or "/"


def _subschemas(pointer: str, node: dict, one: tuple, many: tuple, named: tuple) -> Iterator[str]:
    """The pointers of the object subschemas under these keywords (boolean schemas need no checks)."""
    for key in one:
        if isinstance(node.get(key), dict):
            yield f"{pointer}/{key}"
    for key in many:
        if isinstance(node.get(key), list):
            yield from (f"{pointer}/{key}/{i}" for i, s in enumerate(node[key]) if isinstance(s, dict))
    for key in named:
        if isinstance(node.get(key), dict):
            yield from (f"{pointer}/{key}/{_escape(n)}" for n, s in node[key].items() if isinstance(s, dict))


def _patterns(pointer: str, node: dict) -> Iterator[tuple[str, str]]:
    if isinstance(node.get("pattern"), str):
        yield f"{pointer}/pattern", node["pattern"]
    if isinstance(node.get("patternProperties"), dict):
        for name in node["patternProperties"]:
            yield f"{pointer}/patternProperties/{_escape(name)}", name


def _check_pattern(pointer: str, pattern: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SchemaRefused(pointer, f"pattern longer than {MAX_PATTERN_CHARS} characters")
    try:
        _compiled(pattern)
    except SchemaUnusable as exc:
        raise SchemaRefused(pointer, str(exc)) from None


# ----------------------------------------------------------------------------------------- checking


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re2._Regexp:
    try:
        regex = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise SchemaUnusable(f"pattern {_quoted(pattern)} cannot run in linear time (RE2: {reason})") from None
    if regex.programsize > MAX_PROGRAM_SIZE:
        limit = MAX_PROGRAM_SIZE
        raise SchemaUnusable(
            f"pattern {_quoted(pattern)} is too large (RE2 program size {regex.programsize} > {limit})"
        )
    return regex


def _quoted(text: str) -> str:
    return repr(text) if len(text) <= 60 else f"{text[:60]!r}…"


@dataclass
class _Budget:
    """What one check may still spend; keyword evaluations also bound anyOf/oneOf's exponential back-tracking."""

    pattern_work: int = MAX_PATTERN_WORK
    steps: int = MAX_SCHEMA_STEPS
    deadline: float = field(default_factory=lambda: time.monotonic() + MAX_SCHEMA_SECONDS)


_budget: ContextVar[_Budget | None] = ContextVar("schema_budget", default=None)


def _search(pattern: str, text: str) -> bool:
    regex = _compiled(pattern)
    budget = _budget.get()
    if budget is not None:
        budget.pattern_work -= regex.programsize * max(len(text), 1)
        if budget.pattern_work < 0:
            raise SchemaUnusable("the schema's patterns would take too long on this value")
    return regex.search(text) is not None


def _counted(keyword: Callable) -> Callable:
    def run(validator, value, instance, schema):
        budget = _budget.get()
        if budget is not None:
            budget.steps -= 1
            if budget.steps < 0:
                raise SchemaUnusable(f"the schema would take more than {MAX_SCHEMA_STEPS} steps on this value")
            if budget.steps % 256 == 0 and time.monotonic() > budget.deadline:  # steps deep in errors cost more
                raise SchemaUnusable(f"the schema would take more than {MAX_SCHEMA_SECONDS} s on this value")
        return keyword(validator, value, instance, schema)

    return run


def _too_long(text: str) -> str:
    return f"{text[:40]!r}… is longer than {MAX_MATCHED_CHARS} characters: too long to match a pattern"


def _pattern(validator, patrn, instance, schema):
    if not validator.is_type(instance, "string"):
        return
    if len(instance) > MAX_MATCHED_CHARS:
        yield ValidationError(_too_long(instance))
    elif not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        for key, value in instance.items():
            if len(key) > MAX_MATCHED_CHARS:
                yield ValidationError(_too_long(key), path=[key])
            elif _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: dict, schema: dict) -> list[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in instance
        if key not in properties and not (len(key) <= MAX_MATCHED_CHARS and any(_search(p, key) for p in patterns))
    ]


def _additional_properties(validator, additional, instance, schema):
    """jsonschema's keyword, with the patternProperties it consults matched by RE2."""
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            unexpected = ", ".join(repr(each) for each in sorted(extras, key=str))
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({unexpected} {verb} unexpected)")


_RE2_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}
UserSchemaValidator = validators.extend(
    Draft202012Validator,
    {name: _counted(keyword) for name, keyword in {**Draft202012Validator.VALIDATORS, **_RE2_KEYWORDS}.items()},
)


@lru_cache(maxsize=256)
def _validator(schema_text: str):
    # Without $schema nothing makes jsonschema switch to its own (Python re) validator classes mid-way.
    return UserSchemaValidator(_without_dialect(json.loads(schema_text)))


def _without_dialect(schema: object) -> object:
    if isinstance(schema, dict):
        return {k: _without_dialect(v) for k, v in schema.items() if not (k == "$schema" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_without_dialect(v) for v in schema]
    return schema


def schema_errors(schema: dict, instance: object) -> list[ValidationError]:
    """Every error of `instance` against a user schema; SchemaUnusable when the schema cannot judge it."""
    token = _budget.set(_Budget())
    try:
        return list(_validator(json.dumps(schema, sort_keys=True)).iter_errors(instance))
    except SchemaUnusable:
        raise
    except Exception as exc:  # a schema stored before the rules above can break jsonschema in any way
        raise SchemaUnusable(f"the schema cannot be applied ({exc.__class__.__name__})") from None
    finally:
        _budget.reset(token)


# ----------------------------------------------------------------------------------------- memorySchema


def validate_schema_definition(schema: object) -> None:
    """Refuse a memorySchema the validator cannot run (used by the admin form and the API)."""
    if not isinstance(schema, dict):
        raise InvalidRequest("a memory schema must be a JSON object", details={"field": "memorySchema"})
    try:
        check_user_schema(schema)
    except SchemaRefused as exc:
        raise InvalidRequest(exc.message, details={"field": "memorySchema", "path": exc.path}) from None


def check_memory_against_schema(memory: object, schema: dict | None, *, owner: str = "the product's") -> None:
    """Refuse `memory` if it fails `schema`; `owner` names whose schema it is in the message."""
    if not schema:
        return
    try:
        errors = schema_errors(schema, memory)
    except SchemaUnusable as exc:
        raise RejectedByPolicy(
            f"memory cannot be checked against the JSON Schema: {exc}",
            details={"path": "/", "reason": str(exc), "validator": "schema"},
        ) from None
    error = next(iter(sorted(errors, key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        path = "/" + "/".join(str(part) for part in error.absolute_path)
        raise RejectedByPolicy(
            f"memory fails {owner} JSON Schema at {path}: {error.message}",
            details={"path": path, "reason": error.message, "validator": error.validator},
        )
