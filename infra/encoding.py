"""The JSON bytes of every API answer: orjson, writing what DRF's renderer writes with its
defaults (compact, UTF-8, ``Z`` for UTC, U+2028 and U+2029 escaped). Values orjson does not
know (lazy translations, ``Decimal``, ``timedelta``) go through DRF's encoder.

Shared by the API's renderer and the page cache, which stores a page's encoded bytes and must
serve exactly what the renderer would have written."""

from __future__ import annotations

import orjson
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
_fallback = JSONEncoder().default

# Valid JSON, but not valid JavaScript before ES2019: DRF escapes them, so do we.
_LINE_SEPARATOR, _PARAGRAPH_SEPARATOR = "\u2028".encode(), "\u2029".encode()


def dumps(data) -> bytes:
    out = orjson.dumps(data, default=_fallback, option=_OPTIONS)
    if _LINE_SEPARATOR in out or _PARAGRAPH_SEPARATOR in out:
        out = out.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
    return out


loads = orjson.loads
