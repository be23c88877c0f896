"""What signing in with a provider can fail with, each in the contract's error shape."""

from __future__ import annotations

from comments.exceptions import CommentsError, NotAuthenticated, PermissionDenied


class SignInRefused(PermissionDenied):
    """The reader did not let the provider sign them in (``error=access_denied``)."""

    default_message = "The provider's sign-in was refused."


class SignInUnchecked(CommentsError):
    """The answer comes with no state of a sign-in this browser started (forged, replayed, from
    another browser, or older than ten minutes)."""

    code = "invalid"
    status = 400
    default_message = "This sign-in could not be checked."


class ProviderFailed(NotAuthenticated):
    """The provider answered with an error, or its answer did not check out (the code's
    exchange, the ID token, the nonce)."""

    default_message = "The provider could not sign the reader in."


class ProviderUnavailable(CommentsError):
    code = "unavailable"
    status = 503
    default_message = "The provider cannot be reached."


class AccountClosed(NotAuthenticated):
    default_message = "This account is closed."
