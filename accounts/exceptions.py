"""What signing in by email link can fail with, each in the contract's error shape."""

from __future__ import annotations

from comments.exceptions import CommentsError, NotAuthenticated, PermissionDenied


class LinkInvalid(NotAuthenticated):
    default_message = "This sign-in link is not valid."


class LinkExpired(NotAuthenticated):
    code = "link_expired"
    default_message = "This sign-in link has expired; ask for a new one."


class LinkUsed(NotAuthenticated):
    code = "link_used"
    default_message = "This sign-in link has been used already; ask for a new one."


class OtherBrowser(PermissionDenied):
    default_message = "Open this link in the browser where you asked for it."


class EmailUnavailable(CommentsError):
    code = "unavailable"
    status = 503
    default_message = "The sign-in email could not be sent; please try again shortly."


# Guest comments (accounts/guests.py).


class GuestsNotAllowed(PermissionDenied):
    code = "guests_not_allowed"
    default_message = "This site does not take comments from guests; please sign in to comment."


class FormTokenInvalid(CommentsError):
    code = "form_token_invalid"
    default_message = "This comment form is not valid here; please reload the page and write again."


class FormTokenExpired(CommentsError):
    code = "form_token_expired"
    default_message = "This comment form has been open too long; please send it again."


class FormTokenUsed(CommentsError):
    code = "form_token_used"
    default_message = "This comment form has been sent already; please send it again."


class TooFast(CommentsError):
    """Sent sooner after the form was shown than a person could have written it."""

    code = "too_fast"
    default_message = "That was quicker than anyone can write; please wait a moment and send it again."

    def __init__(self, message: str | None = None, *, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after
