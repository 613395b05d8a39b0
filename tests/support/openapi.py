"""Every response the suite receives, checked against the OpenAPI document that claims to describe it.

tests/conftest.py wraps Django's request handling (the test client and the in-process live server both go
through `BaseHandler.get_response`), so any test of any endpoint — including endpoints added later — checks the
bodies it gets: the status must be documented (an error status falls to the operation's `default`, the error
envelope) and the body must validate against its schema. Objects are read as closed (a property the schema
does not name is a violation), which is what makes the schema and the wire one contract.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

METHODS = ("get", "put", "post", "patch", "delete")


def document() -> dict:
    """The schema as /api/schema/ serves it now: it names the registered runtimes (a test may register one)."""
    from memoryhub.runtimes import registry

    return _document(tuple(registry.runtime_names()))


@cache
def _document(runtimes: tuple[str, ...]) -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def operations() -> dict[str, tuple[str, str]]:
    """operation id → (method, path template)."""
    return {
        op["operationId"]: (method, path)
        for path, ops in document()["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    }


def json_schema(node: Any) -> Any:
    """OpenAPI 3.0's dialect as JSON Schema 2020-12: `nullable`, and objects closed unless they say otherwise."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: json_schema(value) for key, value in node.items() if key not in ("nullable", "example")}
    if "properties" in out and "additionalProperties" not in out and "allOf" not in out:
        out["additionalProperties"] = False
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _routes() -> list[tuple[re.Pattern[str], str]]:
    return _routes_of_paths(tuple(document()["paths"]))


@cache
def _routes_of_paths(paths: tuple[str, ...]) -> list[tuple[re.Pattern[str], str]]:
    # Literal segments win over parameters (/memories/search before /memories/{memory_id}).
    ordered = sorted(paths, key=lambda p: (p.count("{"), -len(p)))
    return [(re.compile("^" + "/".join(_segment(s) for s in p.split("/")) + "$"), p) for p in ordered]


def _segment(segment: str) -> str:
    return "[^/]+" if segment.startswith("{") else re.escape(segment)


def route(path: str) -> str | None:
    return next((template for pattern, template in _routes() if pattern.match(path)), None)


def _validator(template: str, method: str, status_key: str, media: str) -> Draft202012Validator:
    from memoryhub.runtimes import registry

    return _validator_of(tuple(registry.runtime_names()), template, method, status_key, media)


@cache
def _validator_of(runtimes: tuple[str, ...], template: str, method: str, status_key: str, media: str):
    doc = _document(runtimes)
    schema = doc["paths"][template][method]["responses"][status_key]["content"][media]["schema"]
    root = {**json_schema(copy.deepcopy(schema)), "components": json_schema(copy.deepcopy(doc["components"]))}
    return Draft202012Validator(root)


@dataclass
class Record:
    exercised: set[tuple[str, int]] = field(default_factory=set)  # (operation id, status)
    violations: list[str] = field(default_factory=list)


RECORD = Record()


# memoryhub's own response headers: one sent on an answer whose schema does not declare it is a violation.
OWN_HEADERS = ("Idempotent-Replayed", "Operation-Replayed")


def check(method: str, path: str, status: int, content_type: str, body: bytes, headers: Collection[str] = ()) -> None:
    """Record one response; a response the schema does not describe is a violation."""
    method = method.lower()
    template = route(path)
    if template is None or method not in document()["paths"][template]:
        return  # not an operation of the schema (the admin, an unknown path, a method the route lacks)
    operation = document()["paths"][template][method]
    RECORD.exercised.add((operation["operationId"], status))
    problem = _problem(operation, template, method, status, content_type, body) or _undeclared(
        operation, status, headers
    )
    if problem:
        RECORD.violations.append(f"{method.upper()} {path} → {status}: {problem}")


def _problem(operation: dict, template: str, method: str, status: int, content_type: str, body: bytes) -> str:
    responses = operation["responses"]
    key = next((k for k in (str(status), f"{status // 100}XX", "default") if k in responses), None)
    if key is None or (key == "default" and status < 400):
        return f"status {status} is not documented (documented: {sorted(responses)})"
    content = responses[key].get("content")
    if not content:
        return f"an undocumented body {body[:200]!r}" if body else ""
    media = content_type.split(";")[0].strip()
    if media not in content:
        return f"media type {media!r} is not documented ({sorted(content)})"
    if not media.endswith("json"):
        return ""
    try:
        value = json.loads(body)
    except ValueError:
        return f"not JSON: {body[:200]!r}"
    error = next(iter(_validator(template, method, key, media).iter_errors(value)), None)
    if error is None:
        return ""
    where = "/".join(str(p) for p in error.absolute_path)
    return f"at /{where}: {error.message[:300]} (body {json.dumps(value)[:300]})"


def _undeclared(operation: dict, status: int, headers: Collection[str]) -> str:
    declared = operation["responses"].get(str(status), {}).get("headers", {})
    missing = [name for name in OWN_HEADERS if name in headers and name not in declared]
    return f"header {', '.join(missing)} is not declared" if missing else ""


def install() -> None:
    """Check every response Django's handler produces in this process (test client and live server alike)."""
    from django.core.handlers.base import BaseHandler

    original = BaseHandler.get_response
    if getattr(original, "checks_responses", False):
        return

    def get_response(self, request):
        response = original(self, request)
        body = b"" if getattr(response, "streaming", False) else response.content
        content_type = response.get("Content-Type", "")
        check(request.method, request.path, response.status_code, content_type, body, response.headers)
        return response

    get_response.checks_responses = True  # type: ignore[attr-defined]
    BaseHandler.get_response = get_response  # type: ignore[method-assign]


def take_violations() -> list[str]:
    found, RECORD.violations[:] = list(RECORD.violations), []
    return found


def unexercised() -> list[str]:
    """Operations no test received a success (2xx) answer from."""
    succeeded = {op for op, status in RECORD.exercised if 200 <= status < 300}
    return sorted(set(operations()) - succeeded)
