"""The sign-in window's pages of a provider's sign-in: the start (to the provider), and its
end, signed in or not, reached through allauth's callback (``adapter``)."""

from __future__ import annotations

import hmac
import secrets

from allauth.socialaccount.adapter import get_adapter
from allauth.socialaccount.providers.github import views as github
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.openid_connect import views as openid_connect
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation import gettext
from django.views.decorators.http import require_GET
from requests import RequestException

from comments import queries
from comments.exceptions import CommentsError, NotFound, PermissionDenied
from comments.names import clean_display_name
from comments.views import reader_language
from infra.errors import DATABASE_UNAVAILABLE

from .. import remembered
from ..views import message_page, signed_in_page
from . import providers, services
from .exceptions import AccountClosed, ProviderFailed, ProviderUnavailable, SignInRefused, SignInUnchecked


@require_GET
def start(request: HttpRequest, provider: str) -> HttpResponse:
    """Off to the provider, for a site that offers it. A link, not a form: the window's pages
    allow forms to post only to this origin (CSP ``form-action``), and starting a sign-in signs
    nobody in by itself; the flow's state, PKCE verifier and nonce wait in this window's
    session, with the frame's name for the hand-off if the window's page registered one there
    (``providers.handoff_claim``; never from this address)."""
    lang = reader_language(request, request.GET.get("lang"))
    try:
        site = queries.site_by_key(site_key=request.GET.get("site", "")[:64])
        providers.check_offered(site, provider)
        app_provider = get_adapter(request).get_provider(request, provider)
        nonce = secrets.token_urlsafe(24)
        auth_params = app_provider.get_auth_params()
        if providers.is_openid_connect(provider):
            auth_params["nonce"] = nonce
        response = app_provider.redirect(
            request,
            "login",
            data={"site": site.key, "lang": lang, "nonce": nonce, "handoff": providers.handoff_claim(request)},
            auth_params=auth_params,
        )
    except (RequestException, OAuth2Error):  # its discovery document did not come
        return failure(request, ProviderUnavailable(), provider=provider, lang=lang)
    except CommentsError as exc:
        return failure(request, exc, provider=provider, lang=lang)
    except DATABASE_UNAVAILABLE:
        return failure(request, None, provider=provider, lang=lang)
    response["Cache-Control"] = "no-store"
    # Django's default COOP (same-origin) on this redirect would cut the window off from the
    # widget's frame that opened it, and the token could not be handed back.
    response["Cross-Origin-Opener-Policy"] = "unsafe-none"
    return response


def github_callback(request: HttpRequest) -> HttpResponse:
    return _callback(request, "github", "github", github.oauth2_callback)


def openid_connect_callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    return _callback(request, provider_id, "oidc", lambda request: openid_connect.callback(request, provider_id))


def _callback(request: HttpRequest, key: str, kind: str, callback) -> HttpResponse:
    """allauth's callback, for a provider the service has, of its kind (allauth fails hard on
    one it does not know, or on GitHub's at the address of OpenID Connect's), and with a page
    when the provider cannot be reached for the code's exchange."""
    if providers.configured().get(key, {}).get("kind") != kind:
        return failure(request, NotFound(), provider=key, lang=reader_language(request, None))
    try:
        return callback(request)
    except RequestException:
        return failure(request, ProviderUnavailable(), provider=key, lang=reader_language(request, None))


def finish(request: HttpRequest, sociallogin) -> HttpResponse:
    """The provider vouched for the reader and allauth checked its answer (state, code, ID
    token): check the nonce, sign the reader in to the site the window was opened for, and hand
    the token on."""
    data = (sociallogin.state or {}).get("data") or {}
    lang = reader_language(request, data.get("lang"))
    key = sociallogin.account.provider
    try:
        if not data.get("site"):
            raise SignInUnchecked()
        if providers.is_openid_connect(key):
            _check_nonce(sociallogin, expected=data.get("nonce") or "")
        raw, token, _ = services.oidc_sign_in(
            site=queries.site_by_key(site_key=data["site"]),
            provider=key,
            uid=sociallogin.account.uid,
            name=_name(sociallogin),
            verified_emails=_verified_emails(sociallogin),
            extra_data=sociallogin.account.extra_data,
            picture=_picture(sociallogin),
        )
    except CommentsError as exc:
        return failure(request, exc, provider=key, lang=lang)
    except DATABASE_UNAVAILABLE:
        return failure(request, None, provider=key, lang=lang)
    via_label = remembered.via_label(key, lang)
    if data.get("handoff"):
        services.handoff_keep(handoff_hash=data["handoff"], token=token, via=key, via_label=via_label)
    return signed_in_page(
        request,
        raw=raw,
        token=token,
        site=token.site,
        via=key,
        via_label=via_label,
        lang=lang,
        handoff=bool(data.get("handoff")),
    )


def _check_nonce(sociallogin, *, expected: str) -> None:
    """The ID token must carry the nonce this window sent: one minted for another sign-in (a
    token replayed, or injected with another code) does not sign anyone in here."""
    claims = sociallogin.account.extra_data.get("id_token")
    nonce = claims.get("nonce") if isinstance(claims, dict) else None
    if not (expected and isinstance(nonce, str) and hmac.compare_digest(nonce, expected)):
        raise ProviderFailed("The provider's ID token does not carry this sign-in's nonce.")


def _verified_emails(sociallogin) -> list[str]:
    return sorted(
        {address.email.strip().lower() for address in sociallogin.email_addresses if address.verified and address.email}
    )


def _picture(sociallogin) -> str:
    """The reader's picture at the provider (GitHub's avatar, an OpenID provider's ``picture``
    claim), an http(s) address or ""; the service serves it from its own origin
    (``comments.avatars``)."""
    data = sociallogin.account.extra_data or {}
    claims = [data.get("userinfo"), data.get("id_token")]
    found = sociallogin.account.get_avatar_url() or next(
        (c["picture"] for c in claims if isinstance(c, dict) and isinstance(c.get("picture"), str)), ""
    )
    return found[:1000] if isinstance(found, str) and found.startswith(("https://", "http://")) else ""


def _name(sociallogin) -> str:
    """The name the provider gives, as a display name is kept (``clean_display_name``): the full
    name, else the account's username, else "Reader"."""
    user = sociallogin.user
    return clean_display_name(user.get_full_name()) or clean_display_name(user.username or "") or gettext("Reader")


def failure(request: HttpRequest, exc: CommentsError | None, *, provider: str, lang: str) -> HttpResponse:
    """The window's page that says why nobody was signed in. Its address may hold the
    provider's answer, so it names itself to nobody."""
    name = providers.name_of(provider)
    with translation.override(lang):
        status = exc.status if exc is not None else 503
        if exc is None:
            message = gettext("Comments are unavailable for a moment. Please try again shortly.")
        elif isinstance(exc, SignInRefused):
            message = gettext(
                "You did not let %(provider)s sign you in, so nobody was signed in. Close this window, or sign in again from the comments."
            ) % {"provider": name}
        elif isinstance(exc, SignInUnchecked):
            message = gettext(
                "This sign-in could not be checked: it expired, or it did not start in this window. Nobody was signed in. Please sign in again from the comments."
            )
        elif isinstance(exc, ProviderUnavailable):
            message = gettext("%(provider)s cannot be reached right now. Please try again shortly.") % {
                "provider": name
            }
        elif isinstance(exc, ProviderFailed):
            message = gettext("%(provider)s could not sign you in, so nobody was signed in. Please try again.") % {
                "provider": name
            }
        elif isinstance(exc, AccountClosed):
            message = gettext("This account is closed.")
        elif isinstance(exc, NotFound):
            message = gettext("This sign-in is not available here.")
        elif isinstance(exc, PermissionDenied):
            message = gettext("This site does not offer sign-in with %(provider)s.") % {"provider": name}
        else:
            message = gettext("Something went wrong. Please try again.")
    return message_page(request, message, lang=lang, status=status, referrer="no-referrer")
