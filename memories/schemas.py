"""Per-product (and per-scenario) JSON Schemas for memory documents: checked before every write."""

from __future__ import annotations

import json
from functools import lru_cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from memoryhub.errors import InvalidRequest, RejectedByPolicy


def validate_schema_definition(schema: object) -> None:
    """Refuse a schema that is not itself a valid JSON Schema (used by the admin form and the API)."""
    if not isinstance(schema, dict):
        raise InvalidRequest("a memory schema must be a JSON object", details={"field": "memorySchema"})
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidRequest(f"invalid JSON Schema: {exc.message}", details={"field": "memorySchema"}) from None


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_text))


def check_memory_against_schema(memory: object, schema: dict | None) -> None:
    if not schema:
        return
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = next(iter(sorted(validator.iter_errors(memory), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        path = "/" + "/".join(str(part) for part in error.absolute_path)
        raise RejectedByPolicy(
            f"memory fails the product's JSON Schema at {path}: {error.message}",
            details={"path": path, "reason": error.message, "validator": error.validator},
        )
