"""Sign-in on the service itself: verified email addresses and the one-time links sent to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from comments.models import Site


class EmailAccount(models.Model):
    """A verified email address (lower-cased) and the local user who signs in with it."""

    email = models.EmailField(max_length=254, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_accounts")
    verified_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.email


class EmailLink(models.Model):
    """A sign-in link sent by email: good once, until ``expires_at``. Only hashes are kept: of
    the link's secret, and of the secret cookie of the browser that asked for it (the popup),
    which alone may use the link in a page (API.md, "Sign-in by email")."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE)
    email = models.EmailField(max_length=254)
    name = models.CharField(max_length=100)
    lang = models.CharField(max_length=10)
    link_hash = models.CharField(max_length=64, unique=True)
    browser_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="accounts_emaillink_expires")]

    def __str__(self) -> str:
        return f"{self.email} ({self.site_id})"


class SignInHandoff(models.Model):
    """A provider's sign-in waiting for the widget's frame to take it, for when the window
    could not hand the token over itself: a provider's page that sends
    ``Cross-Origin-Opener-Policy`` cuts the window off from the frame that opened it. The frame
    names the hand-off by the SHA-256 of a secret it keeps, and takes it once with the secret
    (API.md, "Sign-in with a provider"); the window's own token is then replaced, so one live
    token comes of a sign-in either way."""

    handoff_hash = models.CharField(max_length=64, unique=True)
    token = models.ForeignKey("comments.ApiToken", on_delete=models.CASCADE)
    via = models.CharField(max_length=64)
    via_label = models.CharField(max_length=100)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"hand-off of a sign-in with {self.via_label or self.via}, until {self.expires_at:%Y-%m-%d %H:%M}"


class Guest(models.Model):
    """A guest author (``User.is_guest``) of a site, and the email address they gave, if any:
    kept for the site's moderators, never shown, and never written to the user row, whose
    address the service sends notifications to (a guest's address is not verified)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="guest"
    )
    site = models.ForeignKey(Site, on_delete=models.CASCADE)
    email = models.EmailField(max_length=254, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"guest {self.user_id} ({self.site_id})"
