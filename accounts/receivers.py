"""Answers to the core's hooks."""

from __future__ import annotations

from . import guests, queries, services
from .oidc import services as oidc_services


def user_erasing(sender, *, user_id: int, **kwargs) -> int:
    """A user's data is being erased: their verified addresses and sign-in links go, and the
    address they gave as a guest."""
    return services.email_accounts_erase(user_id=user_id) + guests.guests_erase(user_id=user_id)


def user_erasing_oidc(sender, *, user_id: int, **kwargs) -> int:
    """A user's data is being erased: their providers' accounts go."""
    return oidc_services.oidc_accounts_erase(user_id=user_id)


def users_with_email(sender, *, email: str, **kwargs) -> set[int]:
    """An operator looks for a person by e-mail: the users with it among the addresses kept here."""
    return queries.user_ids_with_email(email=email)
