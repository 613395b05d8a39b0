"""JSON Schemas (2020-12) of the MCP tools' arguments and structured results.

Arguments never name a product, user or conversation: the tool token fixes them. Every input schema is closed
(`additionalProperties: false`) so a misspelt argument is an in-band error the model can correct, not a silent no-op.
The memory tools reuse the parameters `GET /v1/tools` already offers, so both surfaces validate alike.
"""

from __future__ import annotations

from typing import Any

from memories.services.tools import TOOLS as MEMORY_TOOLS

MAX_SAFE = 9007199254740990
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _result(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


REVISION = {"type": "integer", "minimum": 0}
TEXT = {"type": "string"}

GET_MEMORY_INPUT = MEMORY_TOOLS["get_memory"]["function"]["parameters"]
UPDATE_MEMORY_INPUT = MEMORY_TOOLS["update_memory"]["function"]["parameters"]
GET_MEMORY_OUTPUT = _result({"revision": REVISION, "memory": {"type": ["object", "null"]}})
UPDATE_MEMORY_OUTPUT = _result({"revision": REVISION})

SEARCH_INPUT = _closed(
    {
        "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What to look for."},
        "mode": {
            "enum": ["keyword", "semantic"],
            "description": "keyword: words matched in SQL; semantic: nearest embeddings (cosine).",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "cursor": {
            "type": ["string", "null"],
            "maxLength": 200,
            "description": "`next` of the previous page; memories written meanwhile can repeat or skip a hit.",
        },
    },
    ["query", "mode"],
)
SEARCH_OUTPUT = _result(
    {
        "mode": {"enum": ["keyword", "semantic"]},
        "query": TEXT,
        "next": {"type": ["string", "null"]},
        "results": {
            "type": "array",
            "items": _result(
                {
                    "id": TEXT,
                    "kind": TEXT,
                    "content": {"type": "object"},
                    "evidence": TEXT,
                    "version": REVISION,
                    "score": {"type": "number"},
                    "updatedAt": TEXT,
                }
            ),
        },
    }
)

DIARIES_OUTPUT = _result(
    {
        "subscriptionCategory": TEXT,
        "limit": {"type": "integer", "minimum": 1},
        "entries": {
            "type": "array",
            "items": _result(
                {
                    "id": {"type": "integer"},
                    "roundFrom": {"type": "integer"},
                    "roundTo": {"type": "integer"},
                    "summary": TEXT,
                }
            ),
        },
        "text": TEXT,
    }
)

TABLES_OUTPUT = _result(
    {
        "tables": {
            "type": "array",
            "items": _result(
                {
                    "id": {"type": "integer"},
                    "index": {"type": "integer"},
                    "name": TEXT,
                    "version": REVISION,
                    "columns": {"type": "array", "items": TEXT},
                    "rows": {"type": "array", "items": {"type": "array", "items": TEXT}},
                }
            ),
        },
        "text": TEXT,
    }
)

PAIR = {"category": {"type": "string", "minLength": 1}, "key": {"type": "string", "minLength": 1}}
STATE_OUTPUT = _result({"revision": REVISION, "text": TEXT, "records": {"type": "array", "items": {"type": "object"}}})
PROPOSE_STATE_INPUT = _closed(
    {
        "baseRevision": {**REVISION, "maximum": MAX_SAFE, "description": "The state revision you read."},
        "text": {"type": "string", "description": "The state's running notes (replaces them when given)."},
        "upsert": {"type": "array", "items": _closed({**PAIR, "value": {}}, ["category", "key", "value"])},
        "delete": {"type": "array", "items": _closed(PAIR, ["category", "key"])},
        "operationId": {"type": "string", "pattern": "^[A-Za-z0-9_.:@-]{1,128}$"},
    },
    ["baseRevision"],
)
PROPOSE_STATE_OUTPUT = _result({"revision": REVISION, "replayed": {"type": "boolean"}})

STORY_OUTPUT = _result(
    {
        "version": REVISION,
        "anchorMessageId": {"type": ["integer", "null"]},
        "worldFacts": {"type": "object"},
        "events": {"type": "array"},
        "narrative": {"type": "object"},
        "text": TEXT,
    }
)

_ENTRY_VIEW = {"type": "object", "description": "World Info fields: key, keysecondary, content, comment, order, …"}
LOREBOOK_ENTRIES_INPUT = _closed(
    {
        "lorebook": {
            "type": "string",
            "maxLength": 128,
            "description": "One of the scenario's lorebooks (default: all).",
        }
    },
    [],
)
LOREBOOK_ENTRIES_OUTPUT = _result(
    {
        "lorebooks": {
            "type": "array",
            "items": _result(
                {
                    "id": {"type": "string"},
                    "entries": {
                        "type": "array",
                        "items": _result({"uid": {"type": "string"}, "revision": REVISION, "entry": _ENTRY_VIEW}),
                    },
                }
            ),
        }
    }
)
PROPOSE_LOREBOOK_EDIT_INPUT = _closed(
    {
        "lorebook": {"type": "string", "maxLength": 128},
        "uid": {"type": "string", "maxLength": 64},
        "baseRevision": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE},
        "entry": {**_ENTRY_VIEW, "description": "The fields to change; the others keep their values."},
        "reason": {"type": "string", "maxLength": 1000, "description": "Why the entry should change."},
    },
    ["lorebook", "uid", "baseRevision", "entry"],
)
PROPOSE_LOREBOOK_EDIT_OUTPUT = _result(
    {"proposalId": {"type": "integer", "minimum": 1}, "status": {"type": "string", "enum": ["pending"]}}
)
