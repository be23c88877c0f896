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
from comments.api import serializers as s
from comments.api.fields import StrictCharField
from comments.api.views import ApiView, client_ip, error_responses, validated
from comments.throttling import throttles

from . import services

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
