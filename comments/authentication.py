"""``Authorization: Bearer <token>`` for API clients and the widget's iframe (which cannot rely
on third-party cookies)."""

from __future__ import annotations

import hashlib

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions

from infra import replicas

from . import rowsql
from .models import ApiToken, User

_TOKEN_COLUMNS = rowsql.ModelColumns(ApiToken, "k")
_USER_COLUMNS = rowsql.ModelColumns(User, "u")
_TOKEN_USER = ApiToken._meta.get_field("user")


@replicas.primary_reads()
def token_with_user(key_hash: str) -> ApiToken | None:
    """The token with this hash and its user, in one statement of fixed text (every
    authenticated request asks; the select_related queryset cost more to compile than to run).
    On the primary, as every credential is: a revoked token fails at once, a new one works."""
    row = rowsql.fetch_one(
        f"SELECT {_TOKEN_COLUMNS.sql}, {_USER_COLUMNS.sql} "
        f"FROM {connection.ops.quote_name(ApiToken._meta.db_table)} k "
        f"JOIN {connection.ops.quote_name(User._meta.db_table)} u ON u.id = k.user_id WHERE k.key_hash = %s",
        [key_hash],
    )
    if row is None:
        return None
    token = _TOKEN_COLUMNS.instance(row)
    _TOKEN_USER.set_cached_value(token, _USER_COLUMNS.instance(row, _TOKEN_COLUMNS.width))
    return token


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
        token = token_with_user(hashlib.sha256(raw.encode()).hexdigest())
        if token is None or token.expires_at <= timezone.now() or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or expired token.")
        # A token a site's sign-in issued (its SSO, an email link, a provider, a guest's form)
        # acts on that site alone (queries.visibility.acts_on_site); a password's, on every site.
        token.user.token_site_id = token.site_id
        return token.user, token

    def authenticate_header(self, request):
        return self.keyword
