"""JSON for every failure under ``/api/`` that happens outside DRF's own handling: unknown
URLs, oversized bodies, unexpected exceptions. Other paths keep Django's pages."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from .api.errors import json_error, unavailable_response
from .exceptions import DATABASE_UNAVAILABLE

logger = logging.getLogger("comments.api")


def is_api_request(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


class ApiErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_api_request(request):
            return None
        if isinstance(exception, DATABASE_UNAVAILABLE):
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
