"""JSON parsing that turns every malformed body (deep nesting included) into a 400.

Bodies go through memoryhub.json_text.loads: NUL, lone surrogates and numbers beyond a double's range are
refused here, with the JSON Pointer of the first one, rather than by the database later (docs/contract.md).
"""

from __future__ import annotations

import re
from itertools import accumulate

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from memoryhub import json_text
from memoryhub.errors import InvalidRequest

_RAW_SURROGATE = re.compile("[\ud800-\udfff]")
# A fixed limit well below where json.loads's recursion fails (about 900 levels, depending on the caller's
# stack), so every endpoint refuses the same bodies with the same answer (docs/contract.md#request-bodies).
MAX_BODY_DEPTH = 512
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}.__getitem__


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (the outermost one is 1); strings skipped."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP, brackets)), default=0)


def check_depth(text: str) -> None:
    """Refuse a body nested deeper than MAX_BODY_DEPTH; counting runs only when it has that many brackets."""
    if text.count("[") + text.count("{") <= MAX_BODY_DEPTH:
        return
    depth = nesting_depth(text)
    if depth > MAX_BODY_DEPTH:
        raise TooDeep(depth)


class UnstorableJSON(ParseError):
    """A body that parses but holds what no store keeps; `details.path` names it (memoryhub/api/handler.py).

    A ParseError, not a domain error: whoever reads `request.data` early (the rate limiter's peek at a PUT)
    lets it through like any unparsable body, and DRF never mistakes the body for an empty one."""

    def __init__(self, error: InvalidRequest) -> None:
        super().__init__(error.message)
        self.details = error.details


class TooDeep(ParseError):
    """A body nested deeper than MAX_BODY_DEPTH: `details` carry its depth and the limit."""

    def __init__(self, depth: int | None) -> None:
        super().__init__("JSON nested too deeply")
        self.details = {"depth": depth, "limit": MAX_BODY_DEPTH}


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})  # refuses bytes-to-bytes codecs (bz2_codec, …)
        try:
            text = stream.read().decode(encoding)
            check_depth(text)
            value = json_text.loads(text)
            if _RAW_SURROGATE.search(text):  # only another charset (utf-7, unicode_escape) decodes to one
                json_text.check_storable(value)
            return value
        except InvalidRequest as exc:
            raise UnstorableJSON(exc) from None
        except RecursionError:
            # json.loads recurses per nesting level: not reached past check_depth, but never a 500 either.
            raise TooDeep(None) from None
        except UnicodeDecodeError:
            raise ParseError("the body is not valid UTF-8") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
