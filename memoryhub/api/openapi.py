"""What the OpenAPI document says about each operation: its area (tag), summary and description.

One table, keyed by operation id, so that every operation is documented in one place and a new one without an
entry shows up in tests/test_contract.py. Docstrings are for maintainers and are never published: an operation's
description is the `extend_schema(description=…)` of its view, else the table's. Every error status carries the
error envelope (docs/contract.md#the-error-envelope), added here once instead of on every view.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

from memoryhub.api.openapi_operations import OPERATIONS, TAGS
from memoryhub.identifiers import ID_PATTERN_OPENAPI
from memoryhub.pagination import DEFAULT_LIMIT, MAX_LIMIT

__all__ = ["TAGS", "MemoryhubAutoSchema", "add_error_envelope"]


class MemoryhubAutoSchema(AutoSchema):
    def _entry(self) -> tuple[str, str, str] | None:
        return OPERATIONS.get(self.get_operation_id())

    def get_tags(self) -> list[str]:
        entry = self._entry()
        return [entry[0]] if entry else ["undocumented"]

    def get_summary(self) -> str | None:
        entry = self._entry()
        return entry[1] if entry else None

    def get_description(self) -> str:  # type: ignore[override]
        entry = self._entry()
        return entry[2] if entry else ""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        schema.pop("description", None)  # a serializer's docstring is an implementation note
        return schema


ERROR_ENVELOPE = {
    "type": "object",
    "description": "Every error: `code` is stable and meant for programs, `message` for people, `details` an "
    "object (empty when there is nothing to add). docs/contract.md#the-error-envelope",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "example": "revision_conflict"},
                "message": {"type": "string"},
                "details": {"type": "object", "additionalProperties": {}},
            },
            "required": ["code", "message", "details"],
            "additionalProperties": False,
        }
    },
    "required": ["error"],
    "additionalProperties": False,
}
ERROR_DESCRIPTION = "An error (4xx, 5xx), in the error envelope; docs/contract.md lists the statuses and codes."


def _plain_operation(operation_id: str, responses: dict) -> dict:
    tag, summary, description = OPERATIONS[operation_id]
    return {
        "operationId": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": description,
        "security": [{}],
        "responses": responses,
    }


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


# The operators' endpoints are plain Django views (memoryhub/api/health.py, metrics.py), outside DRF's generator.
_STATUS = {"type": "string"}
OPS_PATHS = {
    "/healthz": {
        "get": _plain_operation(
            "healthz",
            {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {"status": {"type": "string", "enum": ["ok"]}},
                        "required": ["status"],
                    },
                    "Alive.",
                )
            },
        )
    },
    "/readyz": {
        "get": _plain_operation(
            "readyz",
            {
                "200": _json(
                    {
                        "type": "object",
                        "properties": {
                            "status": {"type": "string", "enum": ["ready"]},
                            "dependencies": {"type": "object", "additionalProperties": _STATUS},
                        },
                        "required": ["status", "dependencies"],
                    },
                    "Every dependency answers.",
                ),
                "503": {"description": "A dependency is down."},
            },
        )
    },
    "/metrics": {
        "get": _plain_operation(
            "metrics",
            {
                "200": {"description": "Prometheus text", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "401": {"description": "No METRICS_TOKEN and not an allowed address."},
            },
        )
    },
}


# Components whose objects carry keys beyond their fields: a scenario's sections belong to the apps that register
# them (memoryhub/runtimes/registry.py: diary, tables, tableWebhook, hinos, …) and are validated by those apps.
SECTIONS = {"description": "A section of an app that registered one (diary, tables, …), validated by that app."}
OPEN_COMPONENTS = {"Scenario": SECTIONS, "ScenarioRequest": SECTIONS, "PatchedScenarioRequest": SECTIONS}


# PATCH bodies validated whole (not partially): drf-spectacular marks every PATCH body's fields optional, as DRF's
# partial update would; an app registers the serializers its views require whole (an outside check).
_WHOLE_PATCH_BODIES: dict[str, type] = {}


def whole_patch_body(component: str):
    """Class decorator: the OpenAPI component `component` (a PATCH body) lists the serializer's required fields."""

    def register(serializer_class: type) -> type:
        _WHOLE_PATCH_BODIES[component] = serializer_class
        return serializer_class

    return register


def _require_whole_patch_bodies(schemas: dict) -> None:
    for name, serializer_class in _WHOLE_PATCH_BODIES.items():
        fields = serializer_class().fields
        required = [f.field_name for f in fields.values() if f.required and not f.read_only]
        if name in schemas and required:
            schemas[name]["required"] = required


# The header a replayed answer carries (docs/contract.md#idempotency-retries-run-once), derived from what an
# operation takes: a new operation with an operationId or an Idempotency-Key declares it without an entry.
REPLAY_HEADERS = {
    "Idempotent-Replayed": "`true` when this is the stored answer to an earlier request with the same "
    "Idempotency-Key (absent on the first answer).",
    "Operation-Replayed": "`true` when this is the stored result of an earlier request with the same "
    "operationId (absent on the first answer).",
}


def _replay_header(operation: dict, schemas: dict) -> str | None:
    if any(p.get("in") == "header" and p.get("name") == "Idempotency-Key" for p in operation.get("parameters", [])):
        return "Idempotent-Replayed"
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    component = schemas.get(body.get("$ref", "").rsplit("/", 1)[-1], {})
    return "Operation-Replayed" if "operationId" in component.get("properties", {}) else None


def _declare_replay_headers(paths: dict, schemas: dict) -> None:
    for operations in paths.values():
        for operation in operations.values():
            header = _replay_header(operation, schemas) if isinstance(operation, dict) else None
            for status, response in operation.get("responses", {}).items() if header else ():
                if status.startswith("2"):
                    described = {"description": REPLAY_HEADERS[header], "schema": {"type": "string", "enum": ["true"]}}
                    response.setdefault("headers", {})[header] = described


# Bounds the server enforces on parameters that views declare with a bare type (docs/contract.md: Identifiers,
# Lists and paging): every paged list's `limit`, and the user, conversation and task ids and a checkpoint's stage.
ID_PARAMETERS = ("user_id", "conversation_id", "task_id", "stage")


def _parameter_bounds(parameter: dict) -> dict | None:
    name, where = parameter.get("name"), parameter.get("in")
    if where == "query" and name == "limit":
        return {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}
    if where == "path" and name in ID_PARAMETERS:
        return {"type": "string", "minLength": 1, "maxLength": 128, "pattern": ID_PATTERN_OPENAPI}
    return None


def _declare_parameter_bounds(paths: dict) -> None:
    for operations in paths.values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else ():
                bounds = _parameter_bounds(parameter)
                if bounds is not None:
                    parameter["schema"] = bounds


def add_error_envelope(result, generator, request, public):
    """drf-spectacular postprocessing hook: every operation documents its errors as the error envelope."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    for name, extra in OPEN_COMPONENTS.items():
        if name in schemas:
            schemas[name]["additionalProperties"] = extra
    result["paths"] = {**OPS_PATHS, **result.get("paths", {})}
    _declare_replay_headers(result["paths"], schemas)
    _declare_parameter_bounds(result["paths"])
    _require_whole_patch_bodies(schemas)
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    result["tags"] = [{"name": name, "description": description} for name, description in TAGS.items()]
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for status, response in responses.items():
                if status[0] in "45" and "content" not in response:
                    response["content"] = envelope
            responses.setdefault("default", {"description": ERROR_DESCRIPTION, "content": envelope})
    return result
