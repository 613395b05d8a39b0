"""JSON parsing that turns every malformed body (deep nesting included) into a 400."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json.loads recurses per nesting level; a hostile body must not become a 500.
            raise ParseError("JSON nested too deeply") from None
        except UnicodeDecodeError:
            raise ParseError("the body is not valid UTF-8") from None
