"""Which providers the service has (ACCOUNTS_OIDC_PROVIDERS) and which a site offers, as
allauth sees them: each configured key is one allauth app, made from the settings on each use
(no SocialApp rows), so a change of the environment needs no database step."""

from __future__ import annotations

import re

from django.conf import settings
from django.urls import reverse
from django.utils.http import urlencode

from comments.exceptions import NotFound, PermissionDenied
from comments.models import Site

HANDOFF = re.compile(r"[0-9a-f]{64}")
# Where the window keeps the frame's name for the hand-off: its own session, which only a page of
# this origin can write (``accounts.views.handoff``), never its address, which anyone can write.
HANDOFF_SESSION_KEY = "comments_signin_handoff"


def handoff_claim(request) -> str:
    """The frame's name for the hand-off of its sign-in (the SHA-256 of a secret it keeps), as
    the window's own page registered it in its session, if it did; taken from the session, so
    one registration names one sign-in's hand-off. A name from the window's address is never
    taken: an outsider's link could carry one of their own choosing, and the sign-in it kept
    would be theirs to take (issue 33, F1)."""
    handoff = request.session.pop(HANDOFF_SESSION_KEY, "")
    return handoff if isinstance(handoff, str) and HANDOFF.fullmatch(handoff) else ""


def handoff_register(request, handoff: str) -> bool:
    """Keep ``handoff`` in the window's session, for the provider's sign-in it starts next.
    False for a value that is not a SHA-256 in hex."""
    if not HANDOFF.fullmatch(handoff):
        return False
    request.session[HANDOFF_SESSION_KEY] = handoff
    return True


def configured() -> dict[str, dict]:
    return settings.ACCOUNTS_OIDC_PROVIDERS


def name_of(key: str) -> str:
    return configured().get(key, {}).get("name") or key


def is_openid_connect(key: str) -> bool:
    """Whether the provider speaks OpenID Connect (an ID token, so a nonce); GitHub speaks
    plain OAuth 2."""
    return configured().get(key, {}).get("kind") == "oidc"


def offered(site: Site) -> list[str]:
    """The providers a reader of ``site`` may sign in with: named by the site, and configured
    (a provider taken off the service since the site chose it is not offered)."""
    chosen = site.signin_oidc if isinstance(site.signin_oidc, list) else []
    return [key for key in chosen if isinstance(key, str) and key in configured()]


def check_offered(site: Site, key: str) -> None:
    if key not in configured():
        raise NotFound("This service does not sign readers in with that provider.")
    if key not in offered(site):
        raise PermissionDenied(f"This site does not sign readers in with {name_of(key)}.")


def buttons(site: Site, lang: str) -> list[dict]:
    """The window's buttons, one per provider the site offers: ``{"key", "name", "url"}``."""
    query = urlencode({"site": site.key, "lang": lang})
    return [
        {"key": key, "name": name_of(key), "url": f"{reverse('accounts:oidc-start', args=[key])}?{query}"}
        for key in offered(site)
    ]


def social_apps(key: str | None = None) -> list:
    """allauth's apps for the configured providers (all, or the one whose key is ``key``). The
    app of a generic provider, Google's among them, is allauth's ``openid_connect`` with the key
    as its id (its callback is ``/auth/oidc/<key>/login/callback/``); GitHub's is allauth's
    ``github`` (``/auth/github/login/callback/``). PKCE on for every one."""
    from allauth.socialaccount.models import SocialApp

    apps = []
    for each, config in configured().items():
        if key is not None and each != key:
            continue
        if config["kind"] == "github":
            # allauth asks GitHub for user:email alone (SOCIALACCOUNT_QUERY_EMAIL): the public
            # profile needs no scope, the addresses and whether each is verified need that one.
            app = SocialApp(provider="github", name=config["name"], settings={"oauth_pkce_enabled": True})
        else:
            app = SocialApp(
                provider="openid_connect",
                provider_id=each,
                name=config["name"],
                settings={"server_url": config["discovery_url"], "oauth_pkce_enabled": True},
            )
        app.client_id, app.secret = config["client_id"], config.get("secret", "")
        apps.append(app)
    return apps
