"""Extension points through which ``likes`` and ``moderation`` plug into the comment core
without the core importing them (DESIGN.md: ``comments`` never imports its neighbours)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

import django.dispatch

if TYPE_CHECKING:
    from .models import Comment, Site, Subject, User


@dataclass
class ContentCheck:
    """What a check is asked about: a new comment (``comment`` None) or an edit."""

    site: "Site"
    subject: "Subject"
    author: "User"
    body: str
    is_moderator: bool
    comment: "Comment | None" = None


@dataclass
class ContentDecision:
    """A check's verdict: the status to store, the body to store (a check may mask words), and
    why (kept for the review queue). Raising ``ContentBlocked`` or ``Banned`` refuses instead."""

    status: str
    body: str
    reasons: list[str] = field(default_factory=list)


class ContentChecker(Protocol):
    def __call__(self, check: ContentCheck, decision: ContentDecision) -> ContentDecision: ...


_content_checks: list[ContentChecker] = []


def register_content_check(checker: ContentChecker) -> ContentChecker:
    """Add a check run, in registration order, on every create and edit."""
    if checker not in _content_checks:
        _content_checks.append(checker)
    return checker


def unregister_content_check(checker: ContentChecker) -> None:
    if checker in _content_checks:
        _content_checks.remove(checker)


def run_content_checks(check: ContentCheck, initial: ContentDecision) -> ContentDecision:
    decision = initial
    for checker in _content_checks:
        decision = checker(check, decision)
    return decision


# Whether the viewer likes each comment of a page. The likes app registers a function that
# returns an expression over ``comment_content`` rows (``OuterRef("comment_id")``), so the
# answer rides along with the content query instead of costing a query of its own. Without
# one, nothing is liked.
LikedAnnotation = Callable[["User"], Any]
_liked_annotation: list[LikedAnnotation] = []


def register_liked_annotation(factory: LikedAnnotation) -> None:
    _liked_annotation[:] = [factory]


def liked_annotation(user) -> Any | None:
    if not _liked_annotation or user is None:
        return None
    return _liked_annotation[0](user)


# Sent after the transaction that made the change commits; receivers get ids, not rows.
comment_posted = django.dispatch.Signal()  # comment_id, subject_id, status, reasons
comment_edited = django.dispatch.Signal()  # comment_id, subject_id, status, reasons
comment_status_changed = django.dispatch.Signal()  # comment_id, subject_id, from_status, to_status
