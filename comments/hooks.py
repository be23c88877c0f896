"""Extension points through which ``likes`` and ``moderation`` plug into the comment core
without the core importing them (DESIGN.md: ``comments`` never imports its neighbours)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

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


# Like state for a page of comments. The likes app registers a provider; without one,
# ``like_count`` comes from the row and nothing is liked.
LikeStateProvider = Callable[["User | None", list["Comment"]], tuple[dict[int, int], set[int]]]
_like_state_provider: list[LikeStateProvider] = []


def register_like_state_provider(provider: LikeStateProvider) -> None:
    _like_state_provider[:] = [provider]


def like_state(viewer, comments) -> tuple[dict[int, int], set[int]]:
    """``({comment_id: like_count}, {ids the viewer likes})`` for ``comments``."""
    if _like_state_provider and comments:
        return _like_state_provider[0](viewer, comments)
    return {c.id: c.like_count for c in comments}, set()


# Sent after the transaction that made the change commits; receivers get ids, not rows.
comment_posted = django.dispatch.Signal()  # comment_id, subject_id, status, reasons
comment_edited = django.dispatch.Signal()  # comment_id, subject_id, status, reasons
comment_status_changed = django.dispatch.Signal()  # comment_id, subject_id, from_status, to_status
