"""JSON and text that the stores can keep: no U+0000, no lone surrogate, no number beyond a double's range.

PostgreSQL refuses NUL in `text` and `jsonb`, no UTF-8 encodes a lone surrogate (`"\\ud800"`), and `1e400`
parses to infinity, which no JSON column stores; 10**400 written as digits parses to a Python int, which every
JavaScript reader (the TypeScript client, `memoryhubStore()`) reads as Infinity. Such input is the client's error
(docs/contract.md#request-bodies), refused where it enters — the API's JSON parser, query strings, model-facing
tools — with the JSON Pointer of the first offending value, instead of failing later in the database or the cache.
"""

from __future__ import annotations

import json
import math
import re

from memoryhub.errors import InvalidRequest

# A body can only carry NUL or a lone surrogate as a \u escape (a raw NUL in a string is invalid JSON, a raw
# surrogate invalid UTF-8): the tree is walked only when such an escape may occur. Escaped emoji (valid pairs,
# what `ensure_ascii` encoders send) are told apart by counting in the text, in C, not per node.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_PAIR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F]")
# Overflow is caught by parse_float and parse_int hooks: about 0.3 µs per number in the body, cheaper than any scan
# (a regex for 309 digits in a row costs milliseconds on a 64 KiB document).
# The smallest integer a double rounds to infinity: halfway from the largest double to 2**1024, ties to even.
INT_OVERFLOW = 2**1024 - 2**970
_INT_OVERFLOW_DIGITS = len(str(INT_OVERFLOW))  # 309: no shorter literal reaches it


def loads(text: str) -> object:
    """json.loads that refuses NUL, lone surrogates and numbers beyond a double (InvalidRequest with `details.path`).

    NaN and Infinity literals are refused too (ValueError, like any other malformed JSON)."""
    overflowed = False

    def parse_float(literal: str) -> float:
        nonlocal overflowed
        value = float(literal)
        overflowed = overflowed or math.isinf(value)
        return value

    def parse_int(literal: str) -> int:
        nonlocal overflowed
        value = int(literal)
        if len(literal) >= _INT_OVERFLOW_DIGITS:
            overflowed = overflowed or abs(value) >= INT_OVERFLOW
        return value

    value = json.loads(text, parse_float=parse_float, parse_int=parse_int, parse_constant=_refuse_constant)
    if overflowed or ("\\u" in text and _suspect_escape(text)):
        check_storable(value)
    return value


def _suspect_escape(text: str) -> bool:
    """False when `text` surely holds no \\u0000 and no lone surrogate escape; True: walk the parsed tree."""
    if "\\u0000" in text:
        return True
    if "\\ud" not in text and "\\uD" not in text:
        return False
    if "\\\\" in text:
        return True  # an escaped backslash makes "\\\\ud83d" text, not half of a pair: counting would misjudge
    return len(_SURROGATE.findall(text)) != 2 * len(_PAIR.findall(text))


def check_storable(value: object) -> None:
    """Raise InvalidRequest naming the first string or number in `value` no store keeps (`details.path`)."""
    found = first_unstorable(value)
    if found is not None:
        path, problem = found
        raise InvalidRequest(f"{problem} (at {path or '/'})", details={"path": path})


def first_unstorable(value: object) -> tuple[str, str] | None:
    """(JSON Pointer, what is wrong) of the first unstorable key, string or number in document order, or None.

    Iterative: a parsed body may be nested as deeply as the parser allowed. Each node keeps only its parent's
    trail and its own key; the pointer is spelled out for the one node found."""
    stack: list[tuple[object, tuple | None]] = [(value, None)]
    while stack:
        node, trail = stack.pop()
        if isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and (problem := text_problem(key)) is not None:
                    return _pointer((trail, key)), f"a key {problem}"
            stack.extend(reversed([(child, (trail, key)) for key, child in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([(child, (trail, index)) for index, child in enumerate(node)]))
        elif isinstance(node, str):
            if (problem := text_problem(node)) is not None:
                return _pointer(trail), f"a string {problem}"
        elif (isinstance(node, float) and not math.isfinite(node)) or (
            isinstance(node, int) and not -INT_OVERFLOW < node < INT_OVERFLOW
        ):
            return _pointer(trail), _BEYOND_DOUBLE
    return None


_BEYOND_DOUBLE = "a number is beyond the range of a double (about ±1.8e308)"


def _pointer(trail: tuple | None) -> str:
    segments: list[str] = []
    while trail is not None:
        trail, key = trail
        segments.append(_segment(key))
    return "".join(f"/{segment}" for segment in reversed(segments))


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored ("contains U+0000", "contains a lone surrogate U+D800"), or None."""
    if "\x00" in text:
        return "contains U+0000 (NUL)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return f"contains a lone surrogate U+{ord(text[error.start]):04X}"
    return None


def printable(text: str) -> str:
    """`text` with NUL and lone surrogates as their \\u escape: fit to be echoed in an answer."""
    if text_problem(text) is None:
        return text
    return "".join(f"\\u{ord(c):04x}" if c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _segment(key: object) -> str:
    """A JSON Pointer segment (RFC 6901), printable."""
    return printable(str(key).replace("~", "~0").replace("/", "~1"))


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")
