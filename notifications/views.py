"""The pages behind the links of emails, which work without signing in: every email's
unsubscribe link (RFC 8058), where ``POST`` unsubscribes at once (the mail client's one-click,
or the page's button); and a held comment's approve and reject links, where ``POST`` (the
page's CSRF-protected form) decides. ``GET`` of either only shows a page with a button, since
mail scanners follow links."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import translation
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from comments.api.errors import error_body
from comments.exceptions import CommentsError
from moderation.actions import AlreadyDecided

from . import queries, services
from .decision_links import link_of
from .unsubscribe import scope_of


def _wants_html(request: HttpRequest) -> bool:
    """A person's browser (the page's own form), not a mail client's one-click POST."""
    return "text/html" in request.headers.get("Accept", "")


def _page(request: HttpRequest, context: dict, *, language: str, status: int = 200) -> HttpResponse:
    with translation.override(language):
        html = render_to_string("notifications/unsubscribe.html", {**context, "lang": language}, request)
    response = HttpResponse(html, status=status)
    response["Content-Security-Policy"] = "default-src 'none'; form-action 'self'; frame-ancestors 'none'"
    response["Referrer-Policy"] = "no-referrer"  # the token is in the address
    response["Cache-Control"] = "no-store"
    return response


def _refused(request: HttpRequest, exc: CommentsError) -> HttpResponse:
    if request.method == "GET" and _wants_html(request):
        return _page(
            request, {"error": True}, language=translation.get_language_from_request(request), status=exc.status
        )
    return JsonResponse(error_body(exc.code, exc.message, exc.fields), status=exc.status)


@csrf_exempt  # the signed token is the authority, and the one-click POST comes from a mail client
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest) -> HttpResponse:
    try:
        scope = scope_of(request.GET.get("token"))
        language = queries.preferences_of(user_id=scope.user_id).language
        if request.method == "GET":
            return _page(
                request, {"what": queries.unsubscribe_description(scope=scope, language=language)}, language=language
            )
        done = services.unsubscribe_apply(scope=scope)
    except CommentsError as exc:
        return _refused(request, exc)
    if _wants_html(request):
        return _page(
            request,
            {"done": True, "what": queries.unsubscribe_description(scope=scope, language=language)},
            language=language,
        )
    return JsonResponse({"unsubscribed": done})


def _decision_page(request: HttpRequest, context: dict, *, language: str, status: int = 200) -> HttpResponse:
    with translation.override(language):
        html = render_to_string("notifications/held_decision.html", {**context, "lang": language}, request)
    response = HttpResponse(html, status=status)
    response["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'"
    )
    # Not "no-referrer": the form's POST must carry its origin for the CSRF check, and the page
    # links nowhere else, so the token in its address goes to no other site.
    response["Referrer-Policy"] = "same-origin"
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
def held_decision(request: HttpRequest) -> HttpResponse:
    """A held comment's approve or reject link: ``GET`` shows the comment and a button (or why
    the link no longer decides), ``POST`` takes the decision (``services.held_comment_decide``)."""
    language = translation.get_language_from_request(request)
    try:
        link = link_of(request.GET.get("token"))
        language = queries.preferences_of(user_id=link.moderator_id).language
    except CommentsError as exc:
        return _decision_page(request, {"error": exc.code}, language=language, status=exc.status)
    try:
        if request.method == "POST":
            services.held_comment_decide(link=link)
        held = queries.held_comment_of(link=link)
    except AlreadyDecided as exc:
        context = {"decision": link.decision, "held": queries.held_comment_of(link=link)}
        return _decision_page(request, context, language=language, status=exc.status)
    except CommentsError as exc:
        # The domain's own words for a refusal: no longer a moderator, or another moderator
        # claimed the comment's task in the console.
        context = {"error": exc.code, "message": exc.message}
        return _decision_page(request, context, language=language, status=exc.status)
    done = request.method == "POST"
    context = {"decision": link.decision, "held": held, "done": done}
    return _decision_page(request, context, language=language, status=200 if held.waiting or done else 409)
