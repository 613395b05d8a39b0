"""Shared protocol constants of the Hinos tests."""

from __future__ import annotations

PREPARE, COMMIT = "/v1/memory/prepare", "/v1/memory/commit"
PREPARED = {"claim_id": "claim-1", "memory": "用户答应明天归还铜钥匙", "turn": 1, "state_through_round": 0}
