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
