"""The console's page plumbing, shared by its apps' views (moderation's, webhooks'): the sign-in
and role check of every page, refusals as pages or as the contract's error body for the
console's script, forms' errors, the site a page is about, and safe addresses to go back to."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from comments.exceptions import CommentsError, InvalidInput, NotFound
from comments.models import Site, User
from comments.queries import site_by_key

from . import queries


def wants_json(request: HttpRequest) -> bool:
    """The console's script asks for JSON explicitly; a browser's form post never does."""
    return request.headers.get("Accept", "").startswith("application/json")


def error_page(request: HttpRequest, status: int, message: str, fields=None, *, code: str = "invalid") -> HttpResponse:
    """The page of a refusal, or for the console's script the contract's error body, with the
    code of the domain error when there is one (``comments.exceptions``)."""
    if wants_json(request):
        body = {"error": {"code": code, "message": message}}
        if fields:
            body["error"]["fields"] = fields
        return JsonResponse(body, status=status)
    return render(
        request, "moderation/error.html", {"status": status, "message": message, "fields": fields}, status=status
    )


class ConsoleRequest(HttpRequest):
    """A request as ``console_page`` hands it to a view: signed in, with the sites the user
    moderates."""

    user: User
    console_sites: list[Site]


def console_page(view):
    """Sign-in and role check for every console page, and the domain errors of the services
    and queries turned into pages with their status, message and code (never a 500)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if wants_json(request):
                return JsonResponse(
                    {"error": {"code": "not_authenticated", "message": _("Please sign in again.")}}, status=401
                )
            return redirect_to_login(request.get_full_path(), reverse("console:login"))
        sites = queries.moderated_sites(user=request.user)
        if not sites:
            return error_page(
                request,
                403,
                _("Only site moderators and staff may use the moderation console."),
                code="permission_denied",
            )
        request.console_sites = sites  # type: ignore[attr-defined]  # what makes it a ConsoleRequest
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            if wants_json(request):
                return error_page(request, exc.status, exc.message, code=exc.code)
            raise Http404(exc.message) from None
        except CommentsError as exc:
            return error_page(request, exc.status, exc.message, exc.fields, code=exc.code)

    return wrapped


def form_error(request: HttpRequest, form) -> HttpResponse:
    errors = {name: [str(e) for e in errs] for name, errs in form.errors.items()}
    message = " ".join(errors.pop("__all__", [])) or _("Please correct the highlighted fields.")
    return error_page(request, 400, message, errors or None)


def add_service_errors(form, exc: InvalidInput, renamed: dict[str, str] | None = None) -> None:
    """A service's ``InvalidInput`` shown on the form: each field's messages on the form field
    of that name (``renamed`` maps service names to form names), the rest on the whole form."""
    for name, errors in (exc.fields or {"__all__": [exc.message]}).items():
        name = (renamed or {}).get(name, name)
        for error in errors:
            form.add_error(name if name in form.fields else None, error)


def site_key_for(request: ConsoleRequest, key: str | None) -> str:
    """The site a page is about: the one asked for (the query refuses a site the user does
    not moderate), else the user's first."""
    return key or request.console_sites[0].key


def console_site(request: ConsoleRequest, key: str):
    """The Site for ``key`` from the user's sites; a site outside them is left to the query
    (which refuses it), so it is loaded plainly here."""
    for site in request.console_sites:
        if site.key == key:
            return site
    return site_by_key(site_key=key)


def safe_next(request: HttpRequest, target: str | None, default: str) -> str:
    if (
        target
        and target.startswith("/console/")
        and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return target
    return default


def console_url(name: str, **params) -> str:
    params = {k: v for k, v in params.items() if v not in (None, "")}
    return reverse(name) + (f"?{urlencode(params)}" if params else "")


def site_page(
    request: ConsoleRequest, template: str, nav: str, site_key: str, *, status: int = 200, **context
) -> HttpResponse:
    """A console page about one site: its tab, the site with the switch to the others, and the
    address to come back to after a form."""
    return render(
        request,
        template,
        {
            "nav": nav,
            "site": console_site(request, site_key),
            "sites": request.console_sites,
            "here": request.get_full_path(),
            **context,
        },
        status=status,
    )
