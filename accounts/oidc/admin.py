"""The admin of provider sign-in: the providers' accounts (who signed in with which), and none
of allauth's other pages, whose rows the service never reads (its providers come from the
environment, ACCOUNTS_OIDC_PROVIDERS; it keeps no provider's token and no allauth address)."""

from __future__ import annotations

from django.contrib import admin


def hide_unused_allauth_pages() -> None:
    """Called once the admin has found every app's pages (AccountsConfig.ready runs after the
    admin's own ready, which imports them)."""
    from allauth.account.models import EmailAddress, EmailConfirmation
    from allauth.socialaccount.models import SocialApp, SocialToken

    for model in (SocialApp, SocialToken, EmailAddress, EmailConfirmation):
        if admin.site.is_registered(model):
            admin.site.unregister(model)
