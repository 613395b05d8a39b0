"""Every replay header the code sends is documented in docs/contract.md's idempotency section."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sent_replay_headers() -> set[str]:
    sources = (p for package in ("memories", "memoryhub", "diaries", "tables") for p in (ROOT / package).rglob("*.py"))
    return {name for path in sources for name in re.findall(r'"([A-Za-z-]+-Replayed)"', path.read_text())}


def test_each_replay_header_is_documented_with_its_retry_key(alice):
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    section = text[text.index("## Idempotency") :]
    section = section[: section.index("\n## ", 1)]
    headers = sent_replay_headers()
    assert headers == {"Idempotent-Replayed", "Operation-Replayed"}, headers
    for header in headers:
        assert f"`{header}: true`" in section, header
    # the document write's replay (Idempotency-Key) answers with the header documented for it
    conv = "/v1/users/u1/conversations/c1/memory"
    body = {"expectedRevision": 0, "memory": {"a": 1}}
    first = alice.put(conv, body, HTTP_IDEMPOTENCY_KEY="k1")
    again = alice.put(conv, body, HTTP_IDEMPOTENCY_KEY="k1")
    assert "Idempotent-Replayed" not in first and again["Idempotent-Replayed"] == "true"
