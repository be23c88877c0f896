"""What the accounts app reads for others."""

from __future__ import annotations

from allauth.account.models import EmailAddress

from .models import EmailAccount, Guest


def user_ids_with_email(*, email: str) -> set[int]:
    """The users with ``email`` (without case) as a verified sign-in address, as a guest's
    address, or as a provider's (allauth's addresses of OpenID Connect accounts)."""
    ids: set[int] = set()
    for model in (EmailAccount, Guest, EmailAddress):
        ids.update(model.objects.filter(email__iexact=email).values_list("user_id", flat=True))
    return ids
