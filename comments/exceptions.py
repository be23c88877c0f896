"""Domain errors raised by services and queries. Each carries the API error code it maps to,
so every surface (API, widget, console) reports the same failure the same way."""

from __future__ import annotations


class CommentsError(Exception):
    code = "invalid"
    status = 400
    default_message = "Invalid request."

    def __init__(self, message: str | None = None, *, fields: dict[str, list[str]] | None = None):
        self.message = message or self.default_message
        self.fields = fields
        super().__init__(self.message)


class InvalidInput(CommentsError):
    pass


class NotFound(CommentsError):
    code = "not_found"
    status = 404
    default_message = "Not found."


class PermissionDenied(CommentsError):
    code = "permission_denied"
    status = 403
    default_message = "You do not have permission to do that."


class OtherSiteSignIn(PermissionDenied):
    """The request's bearer token was issued by another site's sign-in (issue 33, F2)."""

    code = "other_site"
    default_message = "This sign-in is for another site: sign in on this one to take part here."


class SubjectClosed(CommentsError):
    code = "subject_closed"
    status = 403
    default_message = "This discussion is closed."


class Banned(CommentsError):
    code = "banned"
    status = 403
    default_message = "You are banned from commenting on this site."


class ContentBlocked(CommentsError):
    code = "content_blocked"
    status = 400
    default_message = "The comment contains words that are not allowed."


class NotAuthenticated(CommentsError):
    code = "not_authenticated"
    status = 401
    default_message = "Authentication credentials were not provided or are invalid."


class RateLimited(CommentsError):
    """Over a rate limit counted by a service rather than a view's throttle (per email address,
    say); ``retry_after`` seconds until the next attempt may pass."""

    code = "rate_limited"
    status = 429
    default_message = "Too many requests; please wait a moment."

    def __init__(self, message: str | None = None, *, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after
