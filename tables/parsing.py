"""Read `<tableEdit>` blocks (the st-memory-enhancement grammar) from a model reply.

Pure code, no Django. The grammar is docs/tables.md, "The `<tableEdit>` grammar". The plugin's own
parser loses data: it deletes whitespace inside values, turns commas into `/`, drops quoted
indices, reads `-1` as `1`, misses multi-line dictionaries, can run a call twice when a reply has several
blocks and throws away a whole batch for one bad call. This parser keeps values as written, judges each
call on its own and returns every call it will not apply as a `SkippedCall` with a reason.

It is a small hand-written reader, not `eval`/JSON: model output is sloppy JSON-ish JavaScript
(`“”` quotes, `，` and `：`, bare keys, trailing commas, `//` comments) and must never raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from memoryhub.wording import count

Op = Literal["insert", "update", "delete"]

OUTSIDE_BLOCK_REASON = "outside a <tableEdit> block; not applied"
UNCLOSED_BLOCK_REASON = "in a <tableEdit> block that is never closed (truncated reply?); not applied"
COMMENTED_OUT_REASON = "commented out with //; not applied"
REASONING_REASON = "inside the model's <think> reasoning, a draft; not applied"
# Reasoning models draft edits in <think> before writing the real block; the plugin applies both (rows twice).
_REASONING_OPEN = re.compile(r"<think(?:ing)?\b[^<>]{0,200}>", re.IGNORECASE)
_REASONING_CLOSE = re.compile(r"</think(?:ing)?\s*>", re.IGNORECASE)

_OPEN_TAG = re.compile(r"<\s*tableEdit\s*>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"<\s*/\s*tableEdit\s*>", re.IGNORECASE)
# `//` comments are matched first so a commented-out call is not run. Function names are matched
# case-insensitively and with a word boundary (the plugin has neither); `（` is what Chinese IMEs type.
_NEXT_THING = re.compile(
    r"(?P<comment>//[^\n]*)"
    r"|(?<![A-Za-z0-9_])(?P<name>insertRow|updateRow|deleteRow|insert|update|delete)\s*[(（]",
    re.IGNORECASE,
)
_CALL_NAME = re.compile(r"(?<![A-Za-z0-9_])(?:insertRow|updateRow|deleteRow)\s*[(（]", re.IGNORECASE)

_OPS: dict[str, Op] = {"insertrow": "insert", "updaterow": "update", "deleterow": "delete"}
_SIGNATURES: dict[Op, tuple[str, ...]] = {
    "insert": ("table", "data"),
    "update": ("table", "row", "data"),
    "delete": ("table", "row"),
}
_USAGE: dict[Op, str] = {
    "insert": "insertRow(tableIndex, {colIndex: value})",
    "update": "updateRow(tableIndex, rowIndex, {colIndex: value})",
    "delete": "deleteRow(tableIndex, rowIndex)",
}

_WS = " \t\r\n\u3000\ufeff"
_SEPS = ",，"
_COLONS = ":："
_DOUBLE_QUOTES = '"“”＂'
_SINGLE_QUOTES = "'‘’"
_QUOTES = _DOUBLE_QUOTES + _SINGLE_QUOTES
# The quotes that close a string, by its opening quote: its own kind (curly pairs in either order).
_CLOSERS = {'"': '"', "＂": "＂", "“": "”“", "”": "”“", "'": "'", "‘": "’‘", "’": "’‘"}
_CLOSE_PARENS = ")）"
# A quote ends a string only when one of these follows it; any other quote is part of the value
# (models write `"他说"好"` and `'Tom's'`). The plugin's loose dict uses the same idea.
_AFTER_STRING = ",，:：})）];；"
_ARG_STOP = _WS + _SEPS + _QUOTES + "(){}（）"
_KEY_STOP = _COLONS + _SEPS + _QUOTES + "{}()（）\n"
# In an unquoted value a comma (or line break) ends the value only when the next key follows, so
# `{0: c,d}` keeps "c,d" and `{1: 12:00}` keeps the time.
_NEXT_PAIR = re.compile(
    r"[ \t\r\n\u3000]*(?:[}]|$|[\"“”＂'‘’][^\"“”＂'‘’\n]{0,40}[\"“”＂'‘’][ \t\u3000]*[:：]|\d{1,6}[ \t\u3000]*[:：])"
)
_INTEGER = re.compile(r"([+-]?)[ \t]*(\d+)")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}
_SIMPLE_ESCAPES.update({quote: quote for quote in _QUOTES})
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_NULL_WORDS = frozenset({"null", "undefined", "None"})
_MAX_INDEX_DIGITS = 6  # no table has a million rows; also keeps int() far from its digit limit
_MAX_SOURCE_CHARS = 300
_OUTSIDE = -1  # block number used while scanning text outside blocks; such calls are never returned


@dataclass(frozen=True)
class TableEditCall:
    """One call as written: `values` maps 0-based column index to the text the model gave."""

    op: Op
    table_index: int
    row_index: int | None
    values: dict[int, str] = field(hash=False)
    block: int
    source: str
    # Cells dropped while reading (e.g. a column name used as key), each a human-readable reason.
    dropped: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkippedCall:
    """A call (or an unclosed block) that will not be applied, and why; `block` is None outside blocks."""

    source: str
    reason: str
    block: int | None


@dataclass(frozen=True)
class ParseResult:
    """Every call of every complete block in text order, plus what was skipped."""

    calls: tuple[TableEditCall, ...] = ()
    skipped: tuple[SkippedCall, ...] = ()
    unclosed_block: bool = False
    block_count: int = 0  # complete <tableEdit> blocks; an empty block still counts

    @property
    def has_edits(self) -> bool:
        return bool(self.calls)


class _Segment(NamedTuple):
    kind: Literal["closed", "unclosed", "outside"]
    text: str
    block: int | None


class _Arg(NamedTuple):
    kind: Literal["dict", "string", "bare"]
    text: str
    pairs: tuple[tuple[str, str], ...] = ()


class _Malformed(Exception):
    """The call's text cannot be read; scanning resumes right after its name."""


class _Invalid(Exception):
    """The call was read but its arguments are unusable; scanning resumes after its `)`."""


def without_table_edits(text: str) -> str:
    """`text` with its closed `<tableEdit>` blocks taken out: what the reply says, not the calls it makes."""
    out, at = [], 0
    while (opened := _OPEN_TAG.search(text, at)) and (closed := _CLOSE_TAG.search(text, opened.end())):
        out.append(text[at : opened.start()])
        at = closed.end()
    out.append(text[at:])
    return "".join(out)


def parse_table_edits(reply: str) -> ParseResult:
    """Return the calls of every closed `<tableEdit>` block of `reply`, each exactly once, in order."""
    calls: list[TableEditCall] = []
    skipped: list[SkippedCall] = []
    unclosed = False
    closed = 0
    # NUL is no text any store keeps (PostgreSQL refuses it): dropped, whether written raw or as \u0000.
    text = reply.replace("\x00", "") if isinstance(reply, str) else ""
    visible, drafts = _split_reasoning(text)
    for draft in drafts:
        found, bad = _scan(draft, _OUTSIDE)
        skipped.extend(SkippedCall(item.source, REASONING_REASON, None) for item in found)
        skipped.extend(SkippedCall(item.source, REASONING_REASON, None) for item in bad)
    for segment in _segments(visible):
        found, bad = _scan(segment.text, _OUTSIDE if segment.block is None else segment.block)
        if segment.kind == "closed":
            closed += 1
            calls.extend(found)
            skipped.extend(bad)
            continue
        unclosed = unclosed or segment.kind == "unclosed"
        skipped.extend(_not_applied(segment, found, bad))
    return ParseResult(tuple(calls), tuple(skipped), unclosed, closed)


# --- blocks -------------------------------------------------------------------------------------


def _split_reasoning(text: str) -> tuple[str, list[str]]:
    """Cut closed <think>…</think> spans out of the reply, in one linear pass (no backtracking)."""
    visible, drafts, pos = [], [], 0
    while (opening := _REASONING_OPEN.search(text, pos)) and (closing := _REASONING_CLOSE.search(text, opening.end())):
        visible.append(text[pos : opening.start()])
        drafts.append(text[opening.end() : closing.start()])
        pos = closing.end()
    visible.append(text[pos:])
    return " ".join(visible), drafts


def _segments(reply: str) -> list[_Segment]:
    """Split the reply into outside text, closed blocks and unclosed blocks, in order."""
    opens = list(_OPEN_TAG.finditer(reply))
    closes = list(_CLOSE_TAG.finditer(reply))
    segments: list[_Segment] = []
    pos, next_close = 0, 0
    for block, opening in enumerate(opens):
        segments.append(_Segment("outside", reply[pos : opening.start()], None))
        while next_close < len(closes) and closes[next_close].start() < opening.end():
            next_close += 1
        reopen = opens[block + 1].start() if block + 1 < len(opens) else len(reply)
        if next_close < len(closes) and closes[next_close].start() < reopen:
            segments.append(_Segment("closed", reply[opening.end() : closes[next_close].start()], block))
            pos = closes[next_close].end()
        else:
            # Re-opened (or the reply ended) before it closed: abandoned or truncated, so not applied.
            segments.append(_Segment("unclosed", reply[opening.end() : reopen], block))
            pos = reopen
    segments.append(_Segment("outside", reply[pos:], None))
    return segments


def _not_applied(segment: _Segment, found: list[TableEditCall], bad: list[SkippedCall]) -> list[SkippedCall]:
    reason = UNCLOSED_BLOCK_REASON if segment.kind == "unclosed" else OUTSIDE_BLOCK_REASON
    result = [SkippedCall(call.source, reason, segment.block) for call in found]
    result += [SkippedCall(item.source, f"{reason} ({item.reason})", segment.block) for item in bad]
    if segment.kind == "unclosed" and not result:
        result.append(SkippedCall(_clip(segment.text.strip()), reason, segment.block))
    return result


# --- calls --------------------------------------------------------------------------------------


def _scan(text: str, block: int) -> tuple[list[TableEditCall], list[SkippedCall]]:
    """Find every call in `text`; skip `//` comments and text between calls (`;`, prose, `<!-- -->`)."""
    calls: list[TableEditCall] = []
    skipped: list[SkippedCall] = []
    pos = 0
    while (match := _NEXT_THING.search(text, pos)) is not None:
        if match.group("comment") is not None:
            skipped.extend(_commented_out(match.group("comment"), block))
            pos = match.end()
        elif match.group("name").lower() not in _OPS:
            # Outside blocks, "update (" is just prose; inside one it is a call the plugin would ignore.
            if block != _OUTSIDE:
                skipped.append(_unknown_function(text, match, block))
            pos = match.end()
        else:
            pos = _read_call(text, match, block, calls, skipped)
    return calls, skipped


def _unknown_function(text: str, match: re.Match[str], block: int) -> SkippedCall:
    reason = f"unknown function {match.group('name')}(); only insertRow, updateRow and deleteRow are applied"
    return SkippedCall(_line_from(text, match.start()), reason, block)


def _commented_out(comment: str, block: int) -> list[SkippedCall]:
    found = _CALL_NAME.finditer(comment)
    return [SkippedCall(_line_from(comment, match.start()), COMMENTED_OUT_REASON, block) for match in found]


def _read_call(
    text: str, match: re.Match[str], block: int, calls: list[TableEditCall], skipped: list[SkippedCall]
) -> int:
    """Read one call starting at `match`; record it in `calls` or `skipped`; return where to go on."""
    op = _OPS[match.group("name").lower()]
    # A call never runs into the next one: reading stops where the next call name starts. This keeps one
    # unclosed quote or brace from swallowing later calls, and keeps the scan linear in the block size.
    following = _CALL_NAME.search(text, match.end())
    limit = following.start() if following is not None else len(text)
    reader = _Reader(text[match.start() : limit], match.end() - match.start())
    try:
        args = _read_args(reader)
    except _Malformed as exc:
        where = ""
        if reader.pos >= len(reader.text):
            where = " before the next call" if following is not None else " before the end of the block"
        skipped.append(SkippedCall(_clip(reader.text.rstrip()), f"{exc}{where}", block))
        return match.end()
    source = reader.text[: reader.pos]
    try:
        calls.append(_build_call(op, args, block, source))
    except _Invalid as exc:
        skipped.append(SkippedCall(source, str(exc), block))
    return match.start() + reader.pos


def _build_call(op: Op, args: list[_Arg], block: int, source: str) -> TableEditCall:
    roles = _SIGNATURES[op]
    if len(args) != len(roles):
        raise _Invalid(f"expected {_USAGE[op]}, got {count(len(args), 'argument')}")
    table = _as_index(args[0], "table index")
    row = _as_index(args[1], "row index") if "row" in roles else None
    values: dict[int, str] = {}
    dropped: tuple[str, ...] = ()
    if "data" in roles:
        values, dropped = _as_values(args[-1])
    return TableEditCall(op, table, row, values, block, source, dropped)


def _as_index(arg: _Arg, what: str) -> int:
    """A table or row index: digits, optionally quoted (`"2"` is row 2, not row 0 as in the plugin)."""
    if arg.kind == "dict":
        raise _Invalid(f"{what} is missing (found a dictionary in its place)")
    match = _INTEGER.fullmatch(arg.text.strip())
    if match is None:
        raise _Invalid(f"{what} {arg.text.strip()!r} is not a number")
    sign, digits = match.groups()
    if len(digits) > _MAX_INDEX_DIGITS:
        raise _Invalid(f"{what} {arg.text.strip()!r} is too large")
    if sign == "-" and int(digits) != 0:
        raise _Invalid(f"{what} -{int(digits)} is negative")
    return int(digits)


def _as_values(arg: _Arg) -> tuple[dict[int, str], tuple[str, ...]]:
    if arg.kind != "dict":
        raise _Invalid("data must be a {colIndex: value} dictionary")
    values: dict[int, str] = {}
    dropped: list[str] = []
    for key, value in arg.pairs:
        column = _as_column(key)
        if column is None:
            dropped.append(f"key {key.strip()!r} is not a column index; cell dropped")
        else:
            values[column] = value
    if not values:
        raise _Invalid('no cell with a column index (e.g. {0: "value"}); ' + "; ".join(dropped or ["empty data"]))
    return values, tuple(dropped)


def _as_column(key: str) -> int | None:
    key = key.strip()
    if key.isdecimal() and len(key) <= _MAX_INDEX_DIGITS:
        return int(key)
    return None


# --- the reader ---------------------------------------------------------------------------------


class _Reader:
    """A cursor over one block's text; every read either consumes input or raises `_Malformed`."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at(self, chars: str) -> bool:
        char = self.peek()
        return char != "" and char in chars

    def skip(self, chars: str = _WS) -> None:
        """Skip `chars` and `//` line comments (models annotate dictionaries)."""
        text, pos = self.text, self.pos
        while pos < len(text):
            if text[pos] in chars:
                pos += 1
            elif text.startswith("//", pos):
                end = text.find("\n", pos)
                pos = len(text) if end == -1 else end + 1
            else:
                break
        self.pos = pos

    def at_quote(self) -> bool:
        """At a quote, or at `\\"` opening a double-escaped string."""
        if self.at(_QUOTES):
            return True
        return self.text.startswith("\\", self.pos) and self.text[self.pos + 1 : self.pos + 2] in tuple(_QUOTES)


def _read_args(reader: _Reader) -> list[_Arg]:
    """Read arguments up to the closing parenthesis; separators are optional (`updateRow(0 1 {…})`)."""
    args: list[_Arg] = []
    while True:
        reader.skip(_WS + _SEPS)
        if reader.peek() == "":
            raise _Malformed("missing ')'")
        if reader.at(_CLOSE_PARENS):
            reader.pos += 1
            return args
        args.append(_read_arg(reader))


def _read_arg(reader: _Reader) -> _Arg:
    if reader.peek() == "{":
        return _Arg("dict", "", _read_dict(reader))
    if reader.at_quote():
        return _Arg("string", _read_string(reader))
    start = reader.pos
    while reader.pos < len(reader.text) and reader.text[reader.pos] not in _ARG_STOP:
        reader.pos += 1
    if reader.pos == start:
        raise _Malformed(f"unexpected {reader.peek()!r} in the arguments")
    return _Arg("bare", reader.text[start : reader.pos])


def _read_dict(reader: _Reader) -> tuple[tuple[str, str], ...]:
    """Read `{key: value, …}`: quoted or bare keys, `:` or `：`, `,` or `，`, any line breaks."""
    reader.pos += 1
    pairs: list[tuple[str, str]] = []
    while True:
        reader.skip(_WS + _SEPS)
        if reader.peek() == "":
            raise _Malformed("unclosed '{'")
        if reader.peek() == "}":
            reader.pos += 1
            return tuple(pairs)
        key = _read_key(reader)
        reader.skip()
        if not reader.at(_COLONS):
            raise _Malformed(f"missing ':' after key {key!r}")
        reader.pos += 1
        reader.skip()
        pairs.append((key, _read_value(reader)))


def _read_key(reader: _Reader) -> str:
    if reader.at_quote():
        return _read_string(reader)
    start = reader.pos
    while reader.pos < len(reader.text) and reader.text[reader.pos] not in _KEY_STOP:
        reader.pos += 1
    if not reader.text[start : reader.pos].strip():
        raise _Malformed(f"unexpected {reader.peek()!r} in a dictionary")
    return reader.text[start : reader.pos]


def _read_value(reader: _Reader) -> str:
    if reader.peek() == "":
        raise _Malformed("unclosed '{'")
    return _read_string(reader) if reader.at_quote() else _read_bare_value(reader)


def _read_bare_value(reader: _Reader) -> str:
    """An unquoted value: up to `}` or to a `,`/line break that is followed by the next key."""
    text, pos = reader.text, reader.pos
    while pos < len(text) and text[pos] != "}":
        if text[pos] in _SEPS + "\n" and _NEXT_PAIR.match(text, pos + 1):
            break
        pos += 1
    value = text[reader.pos : pos].strip(_WS)
    reader.pos = pos
    # Models write JSON's null for "nothing known"; an empty cell is what they mean.
    return "" if value in _NULL_WORDS else value


def _read_string(reader: _Reader) -> str:
    """A quoted string with JSON/JS escapes. Whitespace and commas inside are kept as written.

    Models sometimes double-escape a whole dictionary (`{\\"0\\": \\"v\\"}`); a string opened by `\\"`
    is closed by `\\"` too, like the plugin's "turn \\" into \"" step.
    """
    text = reader.text
    escaped = text[reader.pos] == "\\"
    reader.pos += 2 if escaped else 1
    opener = text[reader.pos - 1]
    quotes = _DOUBLE_QUOTES if opener in _DOUBLE_QUOTES else _SINGLE_QUOTES
    closers = _CLOSERS[opener]
    out: list[str] = []
    # The first quote of another kind that could have closed the string: (position after it, length of out).
    fallback: tuple[int, int] | None = None
    stray = False  # an unescaped quote of the opener's kind after `fallback` that did not close the string
    while reader.pos < len(text):
        char = text[reader.pos]
        if char == "\\" and reader.pos + 1 < len(text):
            if escaped and text[reader.pos + 1] in quotes and _closes_string(text, reader.pos + 2):
                reader.pos += 2
                return "".join(out)
            reader.pos += _read_escape(text, reader.pos, out)
            continue
        reader.pos += 1
        if not escaped and char in quotes:
            closes = _closes_string(text, reader.pos)
            if char in closers:
                if closes:
                    return _closed(reader, out, fallback if stray else None)
                stray = stray or fallback is not None
            elif closes and fallback is None:
                fallback = (reader.pos, len(out))
        out.append(char)
    if fallback is not None:
        return _closed(reader, out, fallback)
    raise _Malformed("unterminated string")


def _closed(reader: _Reader, out: list[str], fallback: tuple[int, int] | None) -> str:
    """The string as read up to its closing quote, or up to `fallback`, a quote of another kind.

    A string ends at a closing quote of its own kind (`"…"`, `“…”` or `“…“`, `'…'`, `‘…’`), so quotes of
    the other kinds inside it are text: `"守卫说“明天见”，转身离开"` is one value. The other kind closes it
    only when its own kind never does, or when it could have and the next quote of its own kind opens
    something rather than closing (`{0: "a”, 1: "b"}` is two values).
    """
    if fallback is None:
        return "".join(out)
    reader.pos, length = fallback
    return "".join(out[:length])


def _read_escape(text: str, pos: int, out: list[str]) -> int:
    """Decode the escape at `pos` (a backslash) into `out`; return how many characters it used."""
    following = text[pos + 1]
    if following in _SIMPLE_ESCAPES:
        out.append(_SIMPLE_ESCAPES[following])
        return 2
    if following == "u" and _HEX4.fullmatch(text, pos + 2, pos + 6):
        return _read_unicode_escape(text, pos, out)
    out.append("\\" + following)  # not an escape a model means (e.g. a path): keep it as written
    return 2


def _read_unicode_escape(text: str, pos: int, out: list[str]) -> int:
    code = int(text[pos + 2 : pos + 6], 16)
    if 0xD800 <= code < 0xDC00 and text.startswith("\\u", pos + 6) and _HEX4.fullmatch(text, pos + 8, pos + 12):
        low = int(text[pos + 8 : pos + 12], 16)
        if 0xDC00 <= low < 0xE000:
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
            return 12
    if 0xD800 <= code < 0xE000:
        # A lone surrogate cannot be stored as UTF-8; keep the escape as the model wrote it.
        out.append(text[pos : pos + 6])
    elif code:  # \u0000 is dropped, like a raw NUL (parse_table_edits)
        out.append(chr(code))
    return 6


def _closes_string(text: str, pos: int) -> bool:
    """True when a quote just before `pos` ends its string: a separator, the end or a line break follows."""
    newline = False
    while pos < len(text) and text[pos] in _WS:
        newline = newline or text[pos] == "\n"
        pos += 1
    # A quote at the end of a line closes it even without a comma: a multi-line dictionary that
    # forgot its commas should not glue the next pair into this value.
    return pos >= len(text) or newline or text[pos] in _AFTER_STRING


# --- helpers ------------------------------------------------------------------------------------


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_SOURCE_CHARS else text[: _MAX_SOURCE_CHARS - 1] + "…"


def _line_from(text: str, start: int) -> str:
    stop = min(len(text), start + _MAX_SOURCE_CHARS)  # bounded, so a long line of junk stays linear
    end = text.find("\n", start, stop)
    return _clip(text[start : stop if end == -1 else end])
