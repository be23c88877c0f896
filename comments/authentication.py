"""``Authorization: Bearer <token>`` for API clients and the widget's iframe (which cannot rely
on third-party cookies)."""

from __future__ import annotations

import hashlib

from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            raw = header[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Malformed token.") from None
        found = ApiToken.objects.select_related("user").filter(key_hash=hashlib.sha256(raw.encode()).hexdigest())[:1]
        token = found[0] if found else None
        if token is None or token.expires_at <= timezone.now() or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or expired token.")
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
