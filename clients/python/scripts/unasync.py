"""Generate src/memoryhub_client/_sync_client.py from _async_client.py (the one source of the client's code).

python clients/python/scripts/unasync.py          # write it
python clients/python/scripts/unasync.py --check  # exit 1 if it is stale (the client's tests run this)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memoryhub_client"
SOURCE, TARGET = PACKAGE / "_async_client.py", PACKAGE / "_sync_client.py"

RULES = [
    (
        r'^"""The async client\..*"""$',
        '"""The sync client: GENERATED from _async_client.py by scripts/unasync.py; do not edit."""',
    ),
    (r"^import asyncio$", "import time"),
    (r"asyncio\.sleep", "time.sleep"),
    (r"\basync def ", "def "),
    (r"\basync for ", "for "),
    (r"\basync with ", "with "),
    (r"\bawait ", ""),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\bAsyncClient\b", "Client"),
    (r"\bAsync([A-Z]\w*)", r"\1"),
]


def generate() -> str:
    text = SOURCE.read_text()
    for pattern, replacement in RULES:
        text = re.sub(pattern, replacement, text, flags=re.M)
    return text


def main() -> int:
    text = generate()
    if "--check" in sys.argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
