"""Sign-in by email link through the API (API.md, "Sign-in by email"): ask for a link, use it."""

from __future__ import annotations

import secrets
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from comments import queries
from comments import services as comment_services
from comments.api import serializers as s
from comments.api.errors import error_body
from comments.api.fields import StrictCharField
from comments.api.views import ApiView, client_ip, error_responses, validated
from comments.authentication import BearerTokenAuthentication
from comments.exceptions import NotAuthenticated, PermissionDenied
from comments.models import ApiToken
from comments.throttling import throttles

from . import remembered, services

LANGUAGES = [code for code, _ in settings.LANGUAGES]


class EmailLinkIn(s.ClosedObjectIn):
    site = StrictCharField(max_length=64)
    email = serializers.EmailField(max_length=254)
    name = StrictCharField(max_length=100)
    lang = serializers.ChoiceField(choices=LANGUAGES, default=LANGUAGES[0])


class EmailLinkOut(serializers.Serializer):
    expires_at = serializers.DateTimeField()
    verifier = serializers.CharField(help_text="Send it with the link's token to POST /auth/email/verify.")


class EmailVerifyIn(s.ClosedObjectIn):
    token = StrictCharField(max_length=200)
    verifier = StrictCharField(max_length=200)


class SignedInOut(s.TokenOut):
    via = serializers.CharField()


def link_url(raw: str) -> str:
    """The absolute address of the page that uses a link's secret, on the service's public
    address (``COMMENTS_PUBLIC_URL``): never the request's ``Host``, which its client writes, so
    a request naming another host cannot have the service mail a link to it (issue 33, F12)."""
    return f"{settings.COMMENTS_PUBLIC_URL}{reverse('accounts:email-link')}?{urlencode({'token': raw})}"


def signed_in(raw: str, token, via: str) -> dict:
    return {"token": raw, "expires_at": token.expires_at, "user": queries.present_user(token.user), "via": via}


class EmailLinkView(ApiView):
    authentication_classes: list = []

    @extend_schema(
        request=EmailLinkIn,
        responses={202: EmailLinkOut, **error_responses(400, 403, 404)},
        summary="Email a one-time sign-in link",
    )
    def post(self, request):
        """Send ``email`` a link that signs its reader in to ``site`` once, within
        ``ACCOUNTS_EMAIL_LINK_TTL`` seconds; in ``lang``. ``name`` names a new account. 403 when
        the site does not allow email sign-in; 429 over the limits per address and per client.
        The answer's ``verifier`` goes with the link's token to ``auth/email/verify``: the link
        signs in this client alone."""
        data = validated(EmailLinkIn, request.data)
        verifier = secrets.token_urlsafe(32)
        link = services.email_link_request(
            site=queries.site_by_key(site_key=data["site"]),
            email=data["email"],
            name=data["name"],
            lang=data["lang"],
            client=client_ip(request),
            link_url=link_url,
            asker_secret=verifier,
        )
        return Response({"expires_at": link.expires_at, "verifier": verifier}, status=status.HTTP_202_ACCEPTED)


class EmailVerifyView(ApiView):
    authentication_classes: list = []

    def get_throttles(self):
        return throttles("login")

    @extend_schema(
        request=EmailVerifyIn,
        responses={200: SignedInOut, **error_responses(400, 401, 403)},
        summary="Sign in with an email link's token",
    )
    def post(self, request):
        """Exchange the ``token`` of a sign-in link, with the ``verifier`` that ``auth/email``
        answered the asking client with, for a bearer token: 401 ``not_authenticated`` for a
        link that never was, ``link_expired`` and ``link_used`` for one past its time or used
        already; 403 when its site no longer allows email sign-in, or the verifier is not the
        asker's (a link asked for in the sign-in window signs in that browser alone)."""
        data = validated(EmailVerifyIn, request.data)
        raw, token, _ = services.email_link_redeem(secret=data["token"], asker_secret=data["verifier"])
        return Response(signed_in(raw, token, "email"))


# --- staying signed in (accounts.remembered) -------------------------------------------------


class SessionIn(s.ClosedObjectIn):
    via = serializers.RegexField(
        remembered.VIA, max_length=40, help_text="How the reader signed in: email, a provider's key."
    )


class SessionResumeIn(s.ClosedObjectIn):
    site = StrictCharField(max_length=64)
    lang = serializers.ChoiceField(choices=LANGUAGES, default=LANGUAGES[0])


class RememberedOut(SignedInOut):
    via_label = serializers.CharField()


def _from_this_origin(request) -> None:
    if not remembered.from_this_origin(request):
        raise PermissionDenied("Only the service's own pages may keep or resume a session.")


class SessionView(ApiView):
    authentication_classes = [BearerTokenAuthentication]

    @extend_schema(
        request=SessionIn,
        responses={204: None, **error_responses(400, 401, 403)},
        summary="Keep this sign-in in the widget's frame",
    )
    def post(self, request):
        """Keep the bearer token of a site's sign-in in the frame's partitioned cookies (the
        widget, after a sign-in in its window), so that the frame's later pages under the same
        top-level site resume it (``auth/session/resume``). For the service's own pages only
        (403 from another origin); 403 for a token that acts on every site (a password's),
        which the window never hands out. The token itself is unchanged."""
        _from_this_origin(request)
        if not isinstance(request.auth, ApiToken):
            raise NotAuthenticated()
        site = request.auth.site
        if site is None:
            raise PermissionDenied("Only a site's sign-in may be kept in its widget.")
        data = validated(SessionIn, request.data)
        response = Response(status=status.HTTP_204_NO_CONTENT)
        raw = request.headers["Authorization"].split()[1]
        remembered.frame_remember(response, site=site, via=data["via"], raw=raw, token=request.auth)
        return response

    @extend_schema(request=None, responses={204: None, **error_responses(401)}, summary="Sign out of the widget")
    def delete(self, request):
        """Revoke the bearer token, as ``DELETE auth/token`` does, and remove the frame's kept
        session of its site: the widget's "Sign out"."""
        if not isinstance(request.auth, ApiToken):
            raise NotAuthenticated()
        comment_services.token_revoke(token=request.auth)
        response = Response(status=status.HTTP_204_NO_CONTENT)
        if (site := request.auth.site) is not None:
            remembered.frame_forget(response, site=site)
        return response


class SessionResumeView(ApiView):
    authentication_classes: list = []

    @extend_schema(
        request=SessionResumeIn,
        responses={200: RememberedOut, **error_responses(400, 401, 403, 404)},
        summary="Resume the sign-in this frame kept",
    )
    def post(self, request):
        """The bearer token the frame kept for ``site`` (``auth/session``), its user and how they
        signed in (``via_label`` in ``lang``). 401 ``not_authenticated`` when none is kept, or
        the one kept was revoked, expired or is another site's (its cookies are removed); 403
        from a page of another origin."""
        _from_this_origin(request)
        data = validated(SessionResumeIn, request.data)
        site = queries.site_by_key(site_key=data["site"])
        kept = remembered.remembered_token(
            request.COOKIES.get(remembered.SESSION_COOKIE.format(site=site.key), ""), site=site
        )
        if kept is None:
            response = Response(
                error_body(NotAuthenticated.code, "No sign-in is kept here."), status=status.HTTP_401_UNAUTHORIZED
            )
            remembered.frame_forget(response, site=site)
            return response
        raw, token, via = kept
        return Response({**signed_in(raw, token, via), "via_label": remembered.via_label(via, data["lang"])})
