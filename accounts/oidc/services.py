"""Every write of signing in with a provider: the local user of a provider's account, made or
joined, and the bearer token of the sign-in."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from allauth.socialaccount.models import SocialAccount
from django.db import IntegrityError, transaction
from django.utils import timezone

from comments import services as core
from comments.models import ApiToken, Site, User
from comments.names import clean_display_name

from ..models import EmailAccount, SignInHandoff
from . import providers
from .exceptions import AccountClosed

# How long a sign-in waits for the frame to take it (the frame asks every few seconds).
HANDOFF_SECONDS = 300


def oidc_sign_in(
    *,
    site: Site,
    provider: str,
    uid: str,
    name: str,
    verified_emails: list[str],
    extra_data: dict,
    picture: str = "",
) -> tuple[str, ApiToken, User]:
    """Sign the reader whose account at ``provider`` is ``uid`` in to ``site``, which must
    offer that provider. The account's local user is made on its first sign-in, named
    ``name``; it joins an existing user instead only when the site says so
    (``signin_link_email``) and the provider vouches for an address (``verified_emails``,
    lower-cased) that the service knows as verified for that user. Returns the bearer token
    (raw), its row and the user. The provider's ``picture`` becomes the user's, as a host's SSO
    payload's does, each time it signs them in."""
    providers.check_offered(site, provider)
    with transaction.atomic():
        account = SocialAccount.objects.select_related("user").filter(provider=provider, uid=uid).first()
        if account is None:
            user = (site.signin_link_email and user_verified_by(verified_emails)) or _new_user(name, verified_emails)
            try:
                with transaction.atomic():
                    account = SocialAccount.objects.create(user=user, provider=provider, uid=uid, extra_data=extra_data)
            except IntegrityError:  # a concurrent first sign-in of the account won: its user
                account = SocialAccount.objects.select_related("user").get(provider=provider, uid=uid)
        if not account.user.is_active:
            raise AccountClosed()
        if picture and account.user.avatar_url != picture:
            account.user.avatar_url = picture
            account.user.save(update_fields=["avatar_url"])
        raw, token = core.token_issue(user=account.user, site=site)
    return raw, token, account.user


def user_verified_by(emails: list[str]) -> User | None:
    """The user an address is verified for: by an email link (EmailAccount), or by a provider
    that vouched for it when it made the user (the only way a provider's user has an email)."""
    if not emails:
        return None
    account = (
        EmailAccount.objects.select_related("user")
        .filter(email__in=emails, user__is_active=True)
        .order_by("pk")
        .first()
    )
    if account is not None:
        return account.user
    return User.objects.filter(email__in=emails, is_active=True, socialaccount__isnull=False).order_by("pk").first()


def _new_user(name: str, verified_emails: list[str]) -> User:
    user = User(
        username=f"oidc-{secrets.token_hex(12)}",
        display_name=clean_display_name(name),  # a provider's name is outside input like any other
        email=verified_emails[0] if verified_emails else "",
    )
    user.set_unusable_password()
    user.save()
    return user


def oidc_accounts_erase(*, user_id: int) -> int:
    """Forget the user's provider accounts (an erasure: the account may sign in again later,
    as a new user); how many went."""
    return SocialAccount.objects.filter(user_id=user_id).delete()[0]


def handoff_keep(*, handoff_hash: str, token: ApiToken, via: str, via_label: str) -> SignInHandoff:
    """Keep the sign-in that issued ``token`` for the frame that names it ``handoff_hash`` (the
    SHA-256, in hex, of a secret it keeps), for ``HANDOFF_SECONDS``. Hand-offs past their time
    go now."""
    now = timezone.now()
    SignInHandoff.objects.filter(expires_at__lte=now).delete()
    handoff, _ = SignInHandoff.objects.update_or_create(
        handoff_hash=handoff_hash,
        defaults={
            "token": token,
            "via": via,
            "via_label": via_label[:100],
            "expires_at": now + timedelta(seconds=HANDOFF_SECONDS),
        },
    )
    return handoff


def handoff_take(*, secret: str) -> tuple[str, ApiToken, SignInHandoff] | None:
    """Take, once, the sign-in kept for the SHA-256 of ``secret``: a new bearer token of its
    user and site, and the window's token, which never reached the frame, is withdrawn. None
    while none waits (not yet, taken already, or past its time)."""
    with transaction.atomic():
        handoff = (
            SignInHandoff.objects.select_for_update(of=("self",))
            .select_related("token__user", "token__site")
            .filter(handoff_hash=hashlib.sha256(secret.encode()).hexdigest(), expires_at__gt=timezone.now())
            .first()
        )
        if handoff is None:
            return None
        window_token = handoff.token
        if not window_token.user.is_active:
            raise AccountClosed()
        raw, token = core.token_issue(user=window_token.user, site=window_token.site)
        window_token.delete()  # and the hand-off with it
    return raw, token, handoff
