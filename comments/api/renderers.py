"""The API's JSON renderer: DRF's, encoding with orjson.

A list page is dozens of nested comment objects. DRF's renderer (the standard library's
``json``, calling back into Python for every datetime) took several times the CPU orjson takes
for the same page.
The bytes are the ones DRF writes with its defaults (``infra.encoding``, which the page cache
uses too). Pretty-printing (``; indent=``) is left to DRF.
"""

from __future__ import annotations

from rest_framework.renderers import JSONRenderer

from infra import encoding


class ApiJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if not self.compact or self.ensure_ascii or self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        return encoding.dumps(data)
