"""The Content-Security-Policy middleware: django-csp's, which sets ``CONTENT_SECURITY_POLICY``
(config/settings.py) on every answer that has no policy of its own, with the request's nonce
where a page used one, less the answers that are JSON.

A browser never runs JSON as a document (``X-Content-Type-Options: nosniff`` is on every
answer, ``SECURE_CONTENT_TYPE_NOSNIFF``), so a policy there guards nothing, while building it
cost each API answer about 40 µs, the API's busiest paths (likes, cached pages) included. Pages,
feeds (a browser may open XML as a document) and everything else keep it."""

from __future__ import annotations

from csp.middleware import CSPMiddleware
from django.http import HttpRequest, HttpResponseBase


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        return super().process_response(request, response)
