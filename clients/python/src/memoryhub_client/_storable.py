"""Checks an adapter makes on a whole batch before its first write, so that bad input writes nothing."""

from __future__ import annotations

import json
from typing import Any


def check_storable(content: Any, what: str) -> None:
    """Raise ValueError naming `what` unless `content` can be sent as JSON the way the client sends it (httpx: no
    NaN or infinity, UTF-8): otherwise the request would fail only when it is sent, after the writes before it."""
    try:
        json.dumps(content, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise ValueError(f"{what} cannot be stored: it is not JSON ({error}); nothing was written") from error
