"""The sign-in window the widget opens on the service's own origin (``/auth/``): first party,
so it needs no third-party cookie. It asks for an email link; the link, opened in the same
browser, signs the reader in and hands the bearer token to the widget's frame
(``static/comments/signin-popup.js``: ``postMessage`` to its opener, or through the waiting
window when the link opened in a tab of its own). Every page is under a strict CSP: no inline
script or style."""

from __future__ import annotations

import secrets

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from comments import queries
from comments.api.views import client_ip
from comments.exceptions import CommentsError, NotFound, PermissionDenied, RateLimited
from comments.views import reader_language
from infra.errors import DATABASE_UNAVAILABLE

from . import remembered, services
from .api import link_url, signed_in
from .exceptions import EmailUnavailable, LinkExpired, LinkInvalid, LinkUsed, OtherBrowser
from .oidc import providers as oidc_providers

# The secret cookie of the browser that asked for a link; only that browser's pages use it.
BROWSER_COOKIE = "comments_signin"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class EmailForm(forms.Form):
    site = forms.CharField(max_length=64, widget=forms.HiddenInput)
    lang = forms.CharField(max_length=20, required=False, widget=forms.HiddenInput)
    email = forms.EmailField(label=gettext_lazy("Email address"), max_length=254)
    name = forms.CharField(label=gettext_lazy("Your name, shown with your comments"), max_length=100)


def _page(
    request, template: str, context: dict, *, lang: str, status: int = 200, referrer: str = "same-origin"
) -> HttpResponse:
    with translation.override(lang):
        html = render_to_string(template, {**context, "lang": lang}, request)
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = CSP
    # The frame that opened this window keeps it (COOP "same-origin" would cut the window off
    # from an opener under another site's page).
    response["Cross-Origin-Opener-Policy"] = "unsafe-none"
    # A link's page says nothing of its address (the secret is in it); the others name
    # themselves to their own origin only (a form's POST needs its Origin for CSRF).
    response["Referrer-Policy"] = referrer
    response["Cache-Control"] = "no-store"
    response["Content-Language"] = lang
    return response


def _message(exc: CommentsError) -> str:
    """What a reader is told, in their language, of a failure the API names by code."""
    for cls, text in (
        (LinkExpired, gettext("This sign-in link has expired. Please ask for a new one.")),
        (LinkUsed, gettext("This sign-in link has been used already. Please ask for a new one.")),
        (LinkInvalid, gettext("This sign-in link is not valid.")),
        (OtherBrowser, gettext("Please open this link in the browser where you asked for it.")),
        (RateLimited, gettext("Too many sign-in links were asked for. Please wait a while before asking again.")),
        (EmailUnavailable, gettext("The email could not be sent. Please try again shortly.")),
        (NotFound, gettext("Unknown site: this page is not set up for comments.")),
        (PermissionDenied, gettext("This site does not offer sign-in by email.")),
    ):
        if isinstance(exc, cls):
            return text
    return gettext("Something went wrong. Please try again.")


def _error(request, exc: CommentsError | None, *, lang: str, referrer: str = "same-origin") -> HttpResponse:
    with translation.override(lang):
        if exc is None:
            message, status = gettext("Comments are unavailable for a moment. Please try again shortly."), 503
        else:
            message, status = _message(exc), exc.status
    return message_page(request, message, lang=lang, status=status, referrer=referrer)


def message_page(request, message: str, *, lang: str, status: int, referrer: str = "same-origin") -> HttpResponse:
    """The window's page that says why nobody was signed in."""
    return _page(request, "accounts/error.html", {"message": message}, lang=lang, status=status, referrer=referrer)


def _start(request, form: EmailForm, site, *, lang: str, status: int = 200, problem: str = "") -> HttpResponse:
    context = {
        "form": form,
        "site": site,
        "problem": problem,
        "providers": oidc_providers.buttons(site, lang),
    }
    return _page(request, "accounts/start.html", context, lang=lang, status=status)


def signed_in_page(
    request,
    *,
    raw: str,
    token,
    site,
    via: str,
    via_label: str,
    lang: str,
    handoff: bool = False,
) -> HttpResponse:
    """The page that ends a sign-in in the window: it hands the bearer token to the widget's
    frame (``signin-popup.js``) and says who is signed in. Its address may hold a secret (an
    email link's, a provider's code), so it names itself to nobody. ``handoff``: the frame can
    also take the sign-in itself (``accounts.oidc``), so a window cut off from it may close."""
    result = {"type": "comments:signin", "site": site.key, **signed_in(raw, token, via)}
    result["expires_at"] = token.expires_at.isoformat()
    result["via_label"] = via_label
    result["handoff"] = handoff
    response = _page(request, "accounts/done.html", {"result": result, "site": site}, lang=lang, referrer="no-referrer")
    remembered.window_remember(response, request, site=site, via=via, raw=raw, token=token)
    return response


@require_GET
def start(request: HttpRequest) -> HttpResponse:
    """The window's first page: the ways the site offers to sign in; or, for a reader this
    window signed in to the site before whose token is still good, the sign-in handed back at
    once (``accounts.remembered``)."""
    lang = reader_language(request, request.GET.get("lang"))
    try:
        site = queries.site_by_key(site_key=request.GET.get("site", "")[:64])
        cookie = remembered.WINDOW_COOKIE.format(site=site.key)
        kept = (
            remembered.remembered_token(request.COOKIES.get(cookie, ""), site=site)
            if cookie in request.COOKIES
            else None
        )
    except CommentsError as exc:
        return _error(request, exc, lang=lang)
    except DATABASE_UNAVAILABLE:
        return _error(request, None, lang=lang)
    if kept is not None:
        raw, token, via = kept
        return signed_in_page(
            request, raw=raw, token=token, site=site, via=via, via_label=remembered.via_label(via, lang), lang=lang
        )
    response = _start(request, EmailForm(initial={"site": site.key, "lang": lang}), site, lang=lang)
    if cookie in request.COOKIES:
        remembered.window_forget(response, site=site)
    return response


@require_POST
def handoff(request: HttpRequest) -> HttpResponse:
    """The window's page registers the frame's name for the hand-off of a provider's sign-in
    (``signin-popup.js``: asked of the frame that opened the window, by ``postMessage`` on this
    origin alone). A POST of this origin's pages only (CSRF: token and ``Origin``), kept in the
    window's session: no outsider's link or form can name a hand-off of their choosing."""
    if not oidc_providers.handoff_register(request, request.POST.get("handoff", "")):
        return HttpResponse("Invalid hand-off.", status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(status=204)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def email(request: HttpRequest) -> HttpResponse:
    """Send the link; the answer tells the reader to open it, and waits for it."""
    form = EmailForm(request.POST)
    lang = reader_language(request, request.POST.get("lang"))
    try:
        site = queries.site_by_key(site_key=request.POST.get("site", "")[:64])
        if not form.is_valid():
            return _start(request, form, site, lang=lang, status=400)
        browser_secret = secrets.token_urlsafe(32)
        services.email_link_request(
            site=site,
            email=form.cleaned_data["email"],
            name=form.cleaned_data["name"],
            lang=lang,
            client=client_ip(request),
            link_url=link_url,
            asker_secret=browser_secret,
        )
    except CommentsError as exc:
        if isinstance(exc, NotFound):
            return _error(request, exc, lang=lang)
        with translation.override(lang):
            problem = _message(exc)
        return _start(request, form, site, lang=lang, status=exc.status, problem=problem)  # type: ignore[possibly-undefined]  # site_by_key raises NotFound only
    except DATABASE_UNAVAILABLE:
        return _error(request, None, lang=lang)
    response = _page(request, "accounts/sent.html", {"site": site, "email": form.cleaned_data["email"]}, lang=lang)
    response.set_cookie(
        BROWSER_COOKIE,
        browser_secret,
        max_age=settings.ACCOUNTS_EMAIL_LINK_TTL,
        path="/auth/",
        httponly=True,
        samesite="Lax",
        secure=request.is_secure(),
    )
    return response


@require_GET
def email_link(request: HttpRequest) -> HttpResponse:
    """The link from the email: once, in the browser that asked for it, it signs the reader in
    and hands the token on."""
    lang = reader_language(request, request.GET.get("lang"))
    try:
        raw, token, link = services.email_link_redeem(
            secret=request.GET.get("token", "")[:200], asker_secret=request.COOKIES.get(BROWSER_COOKIE, "")
        )
    except CommentsError as exc:
        return _error(request, exc, lang=lang, referrer="no-referrer")
    except DATABASE_UNAVAILABLE:
        return _error(request, None, lang=lang, referrer="no-referrer")
    response = signed_in_page(
        request,
        raw=raw,
        token=token,
        site=link.site,
        via="email",
        via_label=remembered.via_label("email", link.lang),
        lang=link.lang,
    )
    response.delete_cookie(BROWSER_COOKIE, path="/auth/", samesite="Lax")
    return response
