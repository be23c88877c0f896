"""Who writes: bearer tokens, users signed in by a site's SSO, follows."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..exceptions import InvalidInput, NotFound
from ..models import (
    ApiToken,
    ExternalIdentity,
    Follow,
    Site,
    User,
)
from ..names import clean_display_name

# --- identity ------------------------------------------------------------------------------


def _token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_issue(*, user: User, site: Site | None = None, expires_at: datetime | None = None) -> tuple[str, ApiToken]:
    """A new bearer token of ``user`` (raw, and its row): good ``COMMENTS_TOKEN_TTL`` seconds,
    or until ``expires_at`` (a guest's: the end of their comment's edit window)."""
    raw = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        key_hash=_token_hash(raw),
        user=user,
        site=site,
        expires_at=expires_at or timezone.now() + timedelta(seconds=settings.COMMENTS_TOKEN_TTL),
    )
    return raw, token


def token_revoke(*, token: ApiToken) -> None:
    """Withdraw a bearer token (a sign-out): it authenticates nothing from now on, in every
    process, since each request looks its token up on the primary."""
    ApiToken.objects.filter(pk=token.pk).delete()


def sso_user_upsert(*, site: Site, external_id: str, name: str, email: str = "", avatar: str = "") -> User:
    """The local user for ``(site, external_id)``, created on first sight; name and avatar
    follow the host site's latest payload. The name is kept as one line of visible text
    (``clean_display_name``); one with nothing visible is the id, as a blank one is."""
    name = clean_display_name(name) or clean_display_name(external_id)
    with transaction.atomic():
        identity = (
            ExternalIdentity.objects.select_for_update()
            .select_related("user")
            .filter(site=site, external_id=external_id)
            .first()
        )
        if identity is None:
            digest = hashlib.sha256(f"{site.pk}:{external_id}".encode()).hexdigest()[:20]
            user = User.objects.create(
                username=f"sso-{site.key[:40]}-{digest}", display_name=name, avatar_url=avatar[:1000]
            )
            user.set_unusable_password()
            user.save(update_fields=["password"])
            try:
                with transaction.atomic():
                    ExternalIdentity.objects.create(site=site, external_id=external_id, user=user, email=email)
            except IntegrityError:
                # A concurrent first sign-in won: use its user.
                user.delete()
                identity = ExternalIdentity.objects.select_related("user").get(site=site, external_id=external_id)
                return identity.user
            return user
        user = identity.user
        changed = []
        if user.display_name != name:
            user.display_name = name
            changed.append("display_name")
        if user.avatar_url != avatar[:1000]:
            user.avatar_url = avatar[:1000]
            changed.append("avatar_url")
        if changed:
            user.save(update_fields=changed)
        if email and identity.email != email:
            ExternalIdentity.objects.filter(pk=identity.pk).update(email=email)
            # An account whose address is the host's (the reader turned emails on with it,
            # notifications.services.email_from_host_set) follows the host's new one.
            if identity.email and user.email == identity.email:
                User.objects.filter(pk=user.pk).update(email=email)
                user.email = email
        return user


# --- follows -------------------------------------------------------------------------------


def follow_set(*, follower: User, followee_id: int, following: bool) -> tuple[bool, bool]:
    """Follow or unfollow; idempotent. Returns ``(following, mutual)``."""
    if followee_id == follower.pk:
        raise InvalidInput("You cannot follow yourself.")
    if not User.objects.filter(pk=followee_id, is_active=True).exists():
        raise NotFound("Unknown user.")
    if following:
        Follow.objects.get_or_create(follower=follower, followee_id=followee_id)
    else:
        Follow.objects.filter(follower=follower, followee_id=followee_id).delete()
    mutual = following and Follow.objects.filter(follower_id=followee_id, followee=follower).exists()
    return following, mutual
