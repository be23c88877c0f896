"""JSON for every failure under ``/api/`` that happens outside DRF's own handling: unknown
URLs, URLs too long, oversized bodies, unexpected exceptions. Other paths keep Django's pages."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from infra.errors import database_unavailable

from .api.errors import json_error, unavailable_response

logger = logging.getLogger("comments.api")


# The longest URL (path and query string, percent-encoded as sent) the API reads; a longer one is
# 414 ``uri_too_long`` in the contract's shape. gunicorn's limit on the whole request line
# (``limit_request_line`` in config/gunicorn.py, its maximum, 8,190 bytes) is above it with room
# for the method and the protocol, so such a URL reaches Django to be answered here; only a line
# past gunicorn's limit meets gunicorn's own (HTML) 414.
MAX_URL_BYTES = 8000


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def url_too_long(request: HttpRequest) -> bool:
    path, query = request.path, request.META.get("QUERY_STRING", "")
    # Percent-encoded, a character of the path is at most 12 bytes (a 4-byte UTF-8 sequence), so
    # nearly every request is known short without encoding anything.
    if len(path) * 12 + len(query) <= MAX_URL_BYTES:
        return False
    return len(request.get_full_path()) > MAX_URL_BYTES


class ApiErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api_request(request) and url_too_long(request):
            return json_error("uri_too_long", f"The URL is longer than {MAX_URL_BYTES} bytes.", 414)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_api_request(request):
            return None
        if database_unavailable(exception):
            logger.warning("Database unavailable on %s %s: %s", request.method, request.path, exception)
            return unavailable_response()
        logger.error("Unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return json_error("server_error", "Something went wrong on our side.", 500)


def handler400(request, exception=None):
    from django.views.defaults import bad_request

    if is_api_request(request):
        return json_error("invalid", "Bad request.", 400)
    return bad_request(request, exception)


def handler403(request, exception=None):
    from django.views.defaults import permission_denied

    if is_api_request(request):
        return json_error("permission_denied", "You do not have permission to do that.", 403)
    return permission_denied(request, exception)


def handler404(request, exception=None):
    from django.views.defaults import page_not_found

    if is_api_request(request):
        return json_error("not_found", "Not found.", 404)
    return page_not_found(request, exception)


def handler500(request):
    from django.views.defaults import server_error

    if is_api_request(request):
        return json_error("server_error", "Something went wrong on our side.", 500)
    return server_error(request)


def csrf_failure(request, reason=""):
    from django.views.csrf import csrf_failure as default

    if is_api_request(request):
        return json_error("permission_denied", f"CSRF check failed: {reason}", 403)
    return default(request, reason)
