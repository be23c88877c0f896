"""The contract's error body for everything under ``/api/``:
``{"error": {"code", "message", "fields"?}}`` with the right status, never HTML, never a 500
for bad input."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from infra.errors import database_unavailable

from ..exceptions import CommentsError

_DRF_CODES = [
    (exceptions.NotAuthenticated, "not_authenticated", 401),
    (exceptions.AuthenticationFailed, "not_authenticated", 401),
    (exceptions.PermissionDenied, "permission_denied", 403),
    (exceptions.NotFound, "not_found", 404),
    (exceptions.MethodNotAllowed, "method_not_allowed", 405),
    (exceptions.NotAcceptable, "not_acceptable", 406),
    (exceptions.UnsupportedMediaType, "unsupported_media_type", 415),
    (exceptions.Throttled, "rate_limited", 429),
    (exceptions.ValidationError, "invalid", 400),
    (exceptions.ParseError, "invalid", 400),
]


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    error: dict[str, object] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


def _flatten(detail) -> dict[str, list[str]]:
    """DRF's nested ``detail`` as ``{field: [messages]}``."""
    if isinstance(detail, dict):
        out = {}
        for name, value in detail.items():
            if isinstance(value, dict):
                for sub, msgs in _flatten(value).items():
                    out[f"{name}.{sub}"] = msgs
            elif isinstance(value, list):
                out[str(name)] = [str(v) for v in value if not isinstance(v, (dict, list))] or [str(value)]
            else:
                out[str(name)] = [str(value)]
        return out
    if isinstance(detail, list):
        return {"non_field_errors": [str(v) for v in detail]}
    return {"non_field_errors": [str(detail)]}


RETRY_AFTER_SECONDS = 5


def unavailable_response() -> JsonResponse:
    """The database is down or unreachable: the contract's 503, and when to come back. Inside
    DRF (``exception_handler``) and outside it (``ApiErrorMiddleware``) alike."""
    response = json_error("unavailable", "The service is unavailable for a moment; please try again.", 503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def exception_handler(exc, context):
    headers = {}
    if database_unavailable(exc):
        set_rollback()
        return unavailable_response()
    if isinstance(exc, CommentsError):
        set_rollback()
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            headers["Retry-After"] = str(max(int(retry_after + 0.999), 1))
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.status, headers=headers)
    if isinstance(exc, RequestDataTooBig):
        set_rollback()
        return Response(error_body("payload_too_large", "The request body is too large."), status=413)
    if isinstance(exc, SuspiciousOperation):
        set_rollback()
        return Response(error_body("invalid", "Bad request."), status=400)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # a real bug: ApiErrorMiddleware answers it as a JSON 500 and logs it
    for cls, code, status in _DRF_CODES:  # noqa: B007 - the match is read after the loop
        if isinstance(exc, cls):
            break
    else:
        code, status = "invalid", exc.status_code
    wait = getattr(exc, "wait", None)  # Throttled's (not in DRF's stubs)
    if isinstance(exc, exceptions.Throttled) and wait is not None:
        headers["Retry-After"] = str(max(int(wait + 0.999), 1))
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    elif status == 401:
        request = context.get("request")
        view = context.get("view")
        if view is not None and request is not None:
            header = view.get_authenticate_header(request)
            if header:
                headers["WWW-Authenticate"] = header
    set_rollback()
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.items()), ("", ["Invalid input."]))
        message = f"{first[0]}: {first[1][0]}" if first[0] != "non_field_errors" else first[1][0]
        return Response(error_body("invalid", message, fields), status=400, headers=headers)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return Response(error_body(code, str(detail)), status=status, headers=headers)


def json_error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status)
