"""JSON parsing that turns every malformed body (deep nesting included) into a 400.

Bodies go through memoryhub.json_text.loads: NUL, lone surrogates and numbers beyond a double's range are
refused here, with the JSON Pointer of the first one, rather than by the database later (docs/contract.md).
"""

from __future__ import annotations

import re

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding

from memoryhub import json_text
from memoryhub.errors import InvalidRequest

_RAW_SURROGATE = re.compile("[\ud800-\udfff]")


class UnstorableJSON(ParseError):
    """A body that parses but holds what no store keeps; `details.path` names it (memoryhub/api/handler.py).

    A ParseError, not a domain error: whoever reads `request.data` early (the rate limiter's peek at a PUT)
    lets it through like any unparsable body, and DRF never mistakes the body for an empty one."""

    def __init__(self, error: InvalidRequest) -> None:
        super().__init__(error.message)
        self.details = error.details


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = get_encoding(parser_context or {})  # refuses bytes-to-bytes codecs (bz2_codec, …)
        try:
            text = stream.read().decode(encoding)
            value = json_text.loads(text)
            if _RAW_SURROGATE.search(text):  # only another charset (utf-7, unicode_escape) decodes to one
                json_text.check_storable(value)
            return value
        except InvalidRequest as exc:
            raise UnstorableJSON(exc) from None
        except RecursionError:
            # json.loads recurses per nesting level; a hostile body must not become a 500.
            raise ParseError("JSON nested too deeply") from None
        except UnicodeDecodeError:
            raise ParseError("the body is not valid UTF-8") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
