"""Extension points through which ``likes`` and ``moderation`` plug into the comment core
without the core importing them (DESIGN.md: ``comments`` never imports its neighbours)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import django.dispatch

from infra import streams

if TYPE_CHECKING:
    from .models import Comment, Site, Subject, User


@dataclass
class ContentCheck:
    """What a check is asked about: a new comment (``comment`` None) or an edit."""

    site: Site
    subject: Subject
    author: User
    body: str
    is_moderator: bool
    comment: Comment | None = None


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


def run_content_checks(check: ContentCheck, initial: ContentDecision) -> ContentDecision:
    decision = initial
    for checker in _content_checks:
        decision = checker(check, decision)
    return decision


# Participation checks: may this user act (like, report) on this site at all? A checker
# raises ``Banned`` (or another ``CommentsError``) to refuse. Posting and editing run the
# content checks instead, which see more.
ParticipationCheck = Callable[[int, int], None]
_participation_checks: list[ParticipationCheck] = []


def register_participation_check(checker: ParticipationCheck) -> None:
    if checker not in _participation_checks:
        _participation_checks.append(checker)


def check_participation(site_id: int, user_id: int) -> None:
    for checker in _participation_checks:
        checker(site_id, user_id)


# Like state of a page of comments. Two providers, both registered by the likes app:
#
# * ``page_like_state(comments, user_id)`` answers from the live store (Redis): for
#   ``comments`` as ``(comment_id, subject_id)`` pairs, ``{comment_id: (like_count, liked)}``
#   in one round trip, for those whose state it holds (``liked`` None where it knows the count
#   but not the viewer's like: the core asks the database, as for a comment left out). It
#   returns None when it cannot answer at all (no Redis configured, Redis down); the core
#   reads what is missing from the database.
# * ``liked_sql(user_id, subject_id)`` is the database fallback for ``liked``: an SQL boolean
#   expression over the content row aliased ``cc`` (``cc.comment_id``) and its parameters, so
#   the answer rides along with the content query instead of costing a query of its own.
#   ``subject_id``: the one subject of the rows asked about, if there is one (None: several).
#
# Without providers, counts come from ``comment_index.like_count`` and nothing is liked.
PageLikeState = Callable[[list[tuple[int, int]], "int | None"], "dict[int, tuple[int, bool | None]] | None"]
LikedSql = Callable[[int, "int | None"], tuple[str, list]]
_page_like_state: list[PageLikeState] = []
_liked_sql: list[LikedSql] = []


def register_page_like_state(provider: PageLikeState) -> None:
    _page_like_state[:] = [provider]


def page_like_state(comments: list[tuple[int, int]], user_id: int | None) -> dict[int, tuple[int, bool | None]] | None:
    if not _page_like_state or not comments:
        return None
    return _page_like_state[0](comments, user_id)


def register_liked_sql(provider: LikedSql) -> None:
    _liked_sql[:] = [provider]


def liked_sql(user_id: int | None, subject_ids: Collection[int]) -> tuple[str, list] | None:
    if not _liked_sql or user_id is None:
        return None
    return _liked_sql[0](user_id, next(iter(subject_ids)) if len(subject_ids) == 1 else None)


# Hand-offs together. The receivers of the hooks below hand work on to other processes (an
# entry on a Redis stream each: a second check, a notifications event, a new comment's empty
# like state); ``infra.streams.together`` gathers what they hand on while a hook is sent, so
# that everything one hook causes travels in one round trip instead of one per receiver.
def send_together(signal: django.dispatch.Signal, sender: type, **kwargs) -> None:
    """Send a hook with the hand-offs of its receivers gathered."""
    with streams.together():
        signal.send(sender=sender, **kwargs)


# Sent after the transaction that made the change commits; receivers get ids, not rows.
comment_posted = django.dispatch.Signal()  # comment_id, subject_id, status, visibility, reasons
comment_edited = django.dispatch.Signal()  # comment_id, subject_id, status, reasons
comment_status_changed = (
    django.dispatch.Signal()
)  # comment_id, subject_id, from_status, to_status, visibility, actor_id
subject_state_changed = django.dispatch.Signal()  # subject_id, state (open or closed)

# Sent by the erasure of a user (portability) while it runs, not after: each app that keeps
# something naming the person (accounts: verified email addresses) removes it and answers how
# many identities it removed.
user_erasing = django.dispatch.Signal()  # user_id

# Asked by an operator's search for a person (portability's GDPR commands): each app that keeps
# e-mail addresses of users beside the user's own (accounts: verified addresses, guests' and
# providers' addresses) answers the ids of the users with ``email``, compared without case.
users_with_email = django.dispatch.Signal()  # email


# Parts of the widget's page that feature apps add, so that the core's embed template names
# none of them: a template included in one of the page's places ("user": under the reader's
# name; "form": after the comment form), the script that drives it, and the sites it is shown
# on. Apps register theirs in ``ready()``; the page shows them in that order. What decides
# ``shown_on`` must be part of the embed page's cache variant (``comments.views.embed``).
@dataclass(frozen=True)
class WidgetPart:
    place: str = ""
    template: str = ""
    script: str = ""  # a path under the static files
    shown_on: Callable[[Site], bool] | None = None  # None: every site


_widget_parts: list[WidgetPart] = []


def register_widget_part(part: WidgetPart) -> None:
    if part not in _widget_parts:
        _widget_parts.append(part)


def widget_parts(site: Site) -> tuple[dict[str, list[str]], list[str]]:
    """For the embed page of ``site``: each place's templates, and the scripts, of the parts
    shown on it."""
    places: dict[str, list[str]] = {}
    scripts: list[str] = []
    for part in _widget_parts:
        if part.shown_on is not None and not part.shown_on(site):
            continue
        if part.template:
            places.setdefault(part.place, []).append(part.template)
        if part.script:
            scripts.append(part.script)
    return places, scripts
