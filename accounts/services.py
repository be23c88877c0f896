"""Every write of sign-in on the service: asking for an email link, and using it."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from comments import services as core
from comments import throttling
from comments.exceptions import InvalidInput, PermissionDenied, RateLimited
from comments.models import ApiToken, Site, User
from comments.names import clean_display_name

from .exceptions import EmailUnavailable, LinkExpired, LinkInvalid, LinkUsed, OtherBrowser
from .mail import send_link_email
from .models import EmailAccount, EmailLink
from .oidc.services import user_verified_by


def secret_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def normalized_email(email: str) -> str:
    return email.strip().lower()


def email_limit_key(email: str) -> str:
    """The address ``email`` is counted as by the per-address limit: lower-cased, and without
    the local part's ``+tag``. Most mail servers deliver ``ada+1@x`` and ``ADA+2@X`` to
    ``ada@x``'s mailbox, so counting each as its own address let anyone flood one mailbox past
    the limit (issue 33, F10). Only the count uses it: the link goes to the address as given."""
    local, at, domain = normalized_email(email).rpartition("@")
    if not at:
        return normalized_email(email)
    return f"{local.split('+', 1)[0] or local}@{domain}"


def email_link_request(
    *,
    site: Site,
    email: str,
    name: str,
    lang: str,
    client: str | None,
    link_url: Callable[[str], str],
    asker_secret: str,
) -> EmailLink:
    """Send ``email`` a one-time sign-in link to ``site`` (``link_url`` makes the link of a
    secret). At most ``email_link`` links per address and ``email_link_client`` per client
    (RATE_LIMITS; an address counts with its ``+tag`` variants, ``email_limit_key``).
    ``name`` names a new account: one line of visible text, refused when nothing is left of it.
    ``asker_secret`` binds the link to whoever asked for it: the asking browser's cookie (the
    sign-in window), or the verifier an API client was answered with; the link signs in nobody
    without it (``email_link_redeem``)."""
    if not site.signin_email:
        raise PermissionDenied("This site does not sign readers in by email.")
    email = normalized_email(email)
    name = clean_display_name(name)
    if not name:
        raise InvalidInput("A reader signs in under a name.", fields={"name": ["This field may not be blank."]})
    for scope, ident in (
        ("email_link", secret_hash(email_limit_key(email))),
        ("email_link_client", client or "unknown"),
    ):
        wait = throttling.limit_reached(scope, ident)
        if wait is not None:
            raise RateLimited("Too many sign-in links asked for; please wait before asking again.", retry_after=wait)
    raw = secrets.token_urlsafe(32)
    link = EmailLink.objects.create(
        site=site,
        email=email,
        name=name,
        lang=lang,
        link_hash=secret_hash(raw),
        browser_hash=secret_hash(asker_secret),
        expires_at=timezone.now() + timedelta(seconds=settings.ACCOUNTS_EMAIL_LINK_TTL),
    )
    try:
        send_link_email(to=email, url=link_url(raw), site=site, lang=lang)
    except OSError:
        EmailLink.objects.filter(pk=link.pk).delete()
        raise EmailUnavailable() from None
    return link


def email_link_redeem(*, secret: str, asker_secret: str) -> tuple[str, ApiToken, EmailLink]:
    """Sign in with the link whose secret is ``secret``: once, before it expires, on a site that
    still allows email, and only by whoever asked for it (``asker_secret``: the cookie of the
    browser that asked, or the API client's verifier), so a link read by anyone else (a mail
    scanner, a forwarded message, a log) signs nobody in. The address is recorded as verified;
    its user is created on first use. Returns the bearer token (raw), its row, and the link."""
    now = timezone.now()
    with transaction.atomic():
        link = (
            EmailLink.objects.select_for_update().select_related("site").filter(link_hash=secret_hash(secret)).first()
        )
        if link is None:
            raise LinkInvalid()
        if link.used_at is not None:
            raise LinkUsed()
        if not (
            asker_secret and link.browser_hash and hmac.compare_digest(link.browser_hash, secret_hash(asker_secret))
        ):
            raise OtherBrowser()
        if link.expires_at <= now:
            raise LinkExpired()
        if not link.site.signin_email:
            raise PermissionDenied("This site does not sign readers in by email.")
        user = email_account_user(email=link.email, name=link.name, verified_at=now, join=link.site.signin_link_email)
        link.used_at, link.user = now, user
        link.save(update_fields=["used_at", "user"])
        raw, token = core.token_issue(user=user, site=link.site)
    return raw, token, link


def email_account_user(*, email: str, name: str, verified_at: datetime, join: bool = False) -> User:
    """The user who signs in with the verified address ``email``, made on its first sign-in
    (named ``name``), or with ``join`` (the site's ``signin_link_email``) the user a provider
    vouched for the address for, if any; an account closed since is refused. Call in a
    transaction."""
    account = EmailAccount.objects.select_related("user").filter(email=email).first()
    joined = join and account is None and user_verified_by([email])
    if joined:
        return EmailAccount.objects.create(email=email, user=joined, verified_at=verified_at).user
    if account is None:
        digest = hashlib.sha256(email.encode()).hexdigest()[:24]
        try:
            with transaction.atomic():
                user = User(username=f"email-{digest}", display_name=clean_display_name(name), email=email)
                user.set_unusable_password()
                user.save()
                EmailAccount.objects.create(email=email, user=user, verified_at=verified_at)
            return user
        except IntegrityError:  # a concurrent first sign-in of the address won: its user
            account = EmailAccount.objects.select_related("user").get(email=email)
    if not account.user.is_active:
        raise LinkInvalid("This account is closed.")
    return account.user


def email_accounts_erase(*, user_id: int) -> int:
    """Forget the user's verified addresses and the links sent for them (an erasure: the
    address may sign in again later, as a new account); how many addresses went."""
    EmailLink.objects.filter(user_id=user_id).delete()
    return EmailAccount.objects.filter(user_id=user_id).delete()[0]
