"""Request body parsers: JSON, refused with a 400 when nested too deeply to handle."""

from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from scheduler_core.whatif.scenarios.nesting import NestingTooDeep, parse_bounded


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser; a body nested deeper than nesting.MAX_DEPTH is a 400 (it would
    exhaust the stack of whatever walks it)."""

    def parse(self, stream, media_type=None, parser_context=None):
        parse = super().parse
        try:
            return parse_bounded(lambda: parse(stream, media_type, parser_context))
        except NestingTooDeep as exc:
            raise ParseError(f"JSON parse error - the body is {exc}") from None
