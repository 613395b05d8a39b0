"""SillyTavern World Info files and Character Card V2/V3 `character_book`s: parsed, viewed, edited, exported. Pure.

An entry is stored as the JSON its file carried (its "native" form, every field kept, even ones memoryhub
does not know), in the lorebook's own format. Everything else works on the entry's *view*: the World Info
field names (`key`, `keysecondary`, `selectiveLogic`, …) with SillyTavern's defaults filled in, read from
wherever the format keeps the field (a card keeps most of them under `extensions`, snake_cased). An edit
names view fields and is written back into the native JSON at the same places, so an export in the
lorebook's own format is the imported file, field for field, plus the edits.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import jsonschema

from memoryhub import json_text
from memoryhub.errors import InvalidRequest

WORLDINFO = "worldinfo"
CHARACTERCARD = "charactercard"
FORMATS = (WORLDINFO, CHARACTERCARD)
MAX_ENTRIES = 5000

# World Info view fields, their defaults (SillyTavern's new-entry template) and JSON Schemas.
_BOOL = {"type": "boolean"}
_OPT_BOOL = {"type": ["boolean", "null"]}
_OPT_COUNT = {"type": ["integer", "null"], "minimum": 0}
VIEW_FIELDS: dict[str, tuple[Any, dict]] = {
    "key": ([], {"type": "array", "items": {"type": "string"}, "maxItems": 200}),
    "keysecondary": ([], {"type": "array", "items": {"type": "string"}, "maxItems": 200}),
    "comment": ("", {"type": "string"}),
    "content": ("", {"type": "string", "maxLength": 100_000}),
    "constant": (False, _BOOL),
    "vectorized": (False, _BOOL),
    "selective": (True, _BOOL),
    "selectiveLogic": (0, {"type": "integer", "enum": [0, 1, 2, 3]}),
    "order": (100, {"type": "integer"}),
    "position": (0, {"type": "integer", "minimum": 0, "maximum": 6}),
    "disable": (False, _BOOL),
    "excludeRecursion": (False, _BOOL),
    "preventRecursion": (False, _BOOL),
    "delayUntilRecursion": (False, {"type": ["boolean", "integer"], "minimum": 0}),
    "probability": (100, {"type": "number", "minimum": 0, "maximum": 100}),
    "useProbability": (True, _BOOL),
    "depth": (4, {"type": "integer", "minimum": 0}),
    "group": ("", {"type": "string"}),
    "groupOverride": (False, _BOOL),
    "groupWeight": (100, {"type": "number", "minimum": 0}),
    "useGroupScoring": (None, _OPT_BOOL),
    "role": (None, {"type": ["integer", "null"], "enum": [0, 1, 2, None]}),
    "scanDepth": (None, {"type": ["integer", "null"], "minimum": 0, "maximum": 1000}),
    "caseSensitive": (None, _OPT_BOOL),
    "matchWholeWords": (None, _OPT_BOOL),
    "sticky": (None, _OPT_COUNT),
    "cooldown": (None, _OPT_COUNT),
    "delay": (None, _OPT_COUNT),
}
_NULL_MEANS_DEFAULT = {name for name, (default, _) in VIEW_FIELDS.items() if default is not None}
VIEW_SCHEMA = {
    "type": "object",
    "properties": {name: schema for name, (_, schema) in VIEW_FIELDS.items()},
    "additionalProperties": False,
}

# Where a Character Card book entry keeps each view field (the rest live in `extensions` under these names).
_CARD_TOP = {
    "key": "keys",
    "keysecondary": "secondary_keys",
    "comment": "comment",
    "content": "content",
    "constant": "constant",
    "selective": "selective",
    "order": "insertion_order",
}
_CARD_EXTENSIONS = {
    "position": "position",
    "excludeRecursion": "exclude_recursion",
    "preventRecursion": "prevent_recursion",
    "delayUntilRecursion": "delay_until_recursion",
    "probability": "probability",
    "useProbability": "useProbability",
    "depth": "depth",
    "selectiveLogic": "selectiveLogic",
    "group": "group",
    "groupOverride": "group_override",
    "groupWeight": "group_weight",
    "useGroupScoring": "use_group_scoring",
    "role": "role",
    "scanDepth": "scan_depth",
    "caseSensitive": "case_sensitive",
    "matchWholeWords": "match_whole_words",
    "vectorized": "vectorized",
    "sticky": "sticky",
    "cooldown": "cooldown",
    "delay": "delay",
}


CARD_SPECS = ("chara_card_v2", "chara_card_v3")


@dataclass(frozen=True)
class ParsedBook:
    """An imported file: its format, everything but the entries (`shell`), and the native entries in file order."""

    format: str
    shell: dict
    entries: list[tuple[str, dict]]  # (uid, native entry JSON)


def _invalid(message: str, field: str) -> InvalidRequest:
    return InvalidRequest(message, details={"field": field})


# --- import ---------------------------------------------------------------------------------------------------


def parse_world_info(data: object) -> ParsedBook:
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict | list):
        raise _invalid("worldInfo must be a World Info object with an 'entries' object", "worldInfo")
    raw = data["entries"]
    items = list(raw.items()) if isinstance(raw, dict) else list(enumerate(raw))
    entries = []
    for key, entry in items:
        where = f"worldInfo.entries.{key}"
        if not isinstance(entry, dict):
            raise _invalid("an entry must be an object", where)
        # An object's key is the uid SillyTavern looks entries up by; a list names them by `uid` (or index).
        uid = key if isinstance(raw, dict) else entry.get("uid", key)
        entries.append((str(uid), entry))
        validate_view(view_of(WORLDINFO, entry), where)
    shell = {k: v for k, v in data.items() if k != "entries"}
    shell["_entriesAs"] = "list" if isinstance(raw, list) else "object"
    return _checked(ParsedBook(WORLDINFO, shell, entries), "worldInfo")


def parse_character_card(card: object) -> ParsedBook:
    """A V2/V3 card (`{"spec", "data": {…, "character_book"}}`); the book's entries become the lorebook's."""
    if not isinstance(card, dict) or not isinstance(card.get("data"), dict):
        raise _invalid("characterCard must be a Character Card V2/V3 object with 'data'", "characterCard")
    if card.get("spec") not in CARD_SPECS:  # only the versions whose character_book is read as documented
        raise _invalid(f"characterCard.spec must be one of {', '.join(CARD_SPECS)}", "characterCard.spec")
    book = card["data"].get("character_book")
    if not isinstance(book, dict) or not isinstance(book.get("entries"), list):
        raise _invalid("the card carries no character_book with an entries list", "characterCard.data.character_book")
    entries = []
    for index, entry in enumerate(book["entries"]):
        where = f"characterCard.data.character_book.entries[{index}]"
        if not isinstance(entry, dict):
            raise _invalid("an entry must be an object", where)
        if "extensions" in entry and not isinstance(entry["extensions"], dict):
            raise _invalid("extensions must be an object", f"{where}.extensions")
        entries.append((str(entry.get("id", index)), entry))
        validate_view(view_of(CHARACTERCARD, entry), where)
    shell = copy.deepcopy(card)
    shell["data"]["character_book"] = {k: v for k, v in book.items() if k != "entries"}
    return _checked(ParsedBook(CHARACTERCARD, shell, entries), "characterCard")


def _checked(book: ParsedBook, field: str) -> ParsedBook:
    if len(book.entries) > MAX_ENTRIES:
        raise _invalid(f"more than {MAX_ENTRIES} entries", field)
    uids = [uid for uid, _ in book.entries]
    if len(set(uids)) != len(uids):
        raise _invalid("two entries share one uid", field)
    return book


def card_from_png(content: bytes) -> object:
    """The card JSON in a PNG's tEXt chunks: `ccv3` (V3) wins over `chara` (V2), both base64 JSON."""
    if content[:8] != b"\x89PNG\r\n\x1a\n":
        raise _invalid("the file is not a PNG", "file")
    chunks: dict[str, bytes] = {}
    offset = 8
    while offset + 8 <= len(content):
        length, kind = struct.unpack(">I4s", content[offset : offset + 8])
        body = content[offset + 8 : offset + 8 + length]
        offset += 12 + length
        if kind == b"tEXt" and b"\x00" in body:
            keyword, text = body.split(b"\x00", 1)
            chunks[keyword.decode("latin-1").lower()] = text
        elif kind == b"IEND":
            break
    found = chunks.get("ccv3") or chunks.get("chara")
    if not found:
        raise _invalid("the PNG carries no 'chara' or 'ccv3' tEXt chunk", "file")
    try:
        # As a JSON body is read: NUL, lone surrogates and numbers beyond a double are 400 with their path.
        return json_text.loads(base64.b64decode(found, validate=False).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        raise _invalid("the card chunk is not base64 JSON", "file") from None


def png_with_card(card: dict, *, v3: bool = False) -> bytes:
    """A 1×1 PNG carrying `card` the way SillyTavern writes one (used by tests and examples)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    text = base64.b64encode(json.dumps(card).encode("utf-8"))
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
    pixels = chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00"))
    cards = chunk(b"tEXt", b"chara\x00" + text) + (chunk(b"tEXt", b"ccv3\x00" + text) if v3 else b"")
    return b"\x89PNG\r\n\x1a\n" + header + cards + pixels + chunk(b"IEND", b"")


# --- the view ---------------------------------------------------------------------------------------------------


def view_of(book_format: str, native: dict) -> dict:
    """The entry in World Info field names with SillyTavern's defaults (a null numeric/boolean is its default)."""
    if book_format == WORLDINFO:
        found = {name: native[name] for name in VIEW_FIELDS if name in native}
    else:
        found = _card_view(native)
    view = {}
    for name, (default, _) in VIEW_FIELDS.items():
        value = found.get(name, default)
        view[name] = default if value is None and name in _NULL_MEANS_DEFAULT else copy.deepcopy(value)
    return view


def _card_view(native: dict) -> dict:
    raw = native.get("extensions")
    extensions: dict = raw if isinstance(raw, dict) else {}
    found = {name: native[field] for name, field in _CARD_TOP.items() if field in native}
    found |= {name: extensions[field] for name, field in _CARD_EXTENSIONS.items() if field in extensions}
    found["disable"] = not native.get("enabled")  # SillyTavern: an entry without `enabled: true` is disabled
    if "position" not in extensions:  # SillyTavern's convertCharacterBook: only "before_char" is before
        found["position"] = 0 if native.get("position") == "before_char" else 1
    if "caseSensitive" not in found and isinstance(native.get("case_sensitive"), bool):
        found["caseSensitive"] = native["case_sensitive"]  # the V2 spec's own field, when no extension says
    if "selective" not in native:
        found["selective"] = False  # a card entry is selective only when it says so (SillyTavern's reading)
    return found


def validate_view(view: object, where: str) -> dict:
    """Raise 400 naming the first bad field (e.g. `entry.selectiveLogic`)."""
    errors = sorted(jsonschema.Draft202012Validator(VIEW_SCHEMA).iter_errors(view), key=lambda e: list(e.path))
    if errors:
        error = errors[0]
        path = ".".join(str(p) for p in error.path)
        field = f"{where}.{path}" if path else where
        if error.validator == "additionalProperties":
            raise _invalid(f"unknown entry field(s); the fields are: {', '.join(VIEW_FIELDS)}", field)
        raise _invalid(f"{field}: {error.message}", field)
    return view  # type: ignore[return-value]


def apply_edit(book_format: str, native: dict, changes: dict) -> dict:
    """The native entry with the view fields in `changes` written where the format keeps them."""
    out = copy.deepcopy(native)
    for name, value in changes.items():
        if book_format == WORLDINFO:
            out[name] = value
        elif name in _CARD_TOP:
            out[_CARD_TOP[name]] = value
        elif name == "disable":
            out["enabled"] = not value
        else:
            extensions = out.setdefault("extensions", {})
            extensions[_CARD_EXTENSIONS[name]] = value
            if name == "position":
                out["position"] = "before_char" if value == 0 else "after_char"
    return out


def new_native(book_format: str, uid: str, view: dict) -> dict:
    """A new entry's native JSON: every view field, in the format's own places."""
    if book_format == WORLDINFO:
        return {"uid": int(uid) if uid.isdigit() else uid, **view}
    base: dict[str, Any] = {"id": int(uid) if uid.isdigit() else uid, "enabled": True, "extensions": {}}
    return apply_edit(CHARACTERCARD, base, view)


# --- export -----------------------------------------------------------------------------------------------------


def export(book_format: str, shell: dict, entries: list[tuple[str, dict]], *, wanted: str, name: str) -> dict:
    """The lorebook as a file in `wanted` format: its own format is the stored file; the other one is converted."""
    if wanted == book_format:
        return _own(book_format, shell, entries)
    views = [(uid, view_of(book_format, native)) for uid, native in entries]
    if wanted == WORLDINFO:
        return {"entries": {uid: new_native(WORLDINFO, uid, view) for uid, view in views}}
    book = {"name": name, "entries": [new_native(CHARACTERCARD, uid, view) for uid, view in views]}
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name, "character_book": book}}


def _own(book_format: str, shell: dict, entries: list[tuple[str, dict]]) -> dict:
    out = copy.deepcopy(shell)
    if book_format == WORLDINFO:
        as_list = out.pop("_entriesAs", "object") == "list"
        out["entries"] = [n for _, n in entries] if as_list else dict(entries)
        return out
    out["data"]["character_book"]["entries"] = [native for _, native in entries]
    return out
