"""Every read of the notifications app, each with a bounded number of queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from comments import rowsql
from comments.exceptions import InvalidInput, NotFound, PermissionDenied
from comments.models import Comment, CommentContent, ExternalIdentity, Site, Status, Subject, User
from comments.queries import Page, decode_cursor, encode_cursor, is_site_moderator, present_user
from moderation.models import ReviewTask, TaskState

from .decision_links import DecisionLink
from .models import (
    COMMENT_KINDS,
    DEFAULT_EMAIL,
    HeldEmail,
    Kind,
    Notification,
    Preferences,
    SiteModeratorEmail,
    Subscription,
    email_field,
)
from .unsubscribe import Scope

if TYPE_CHECKING:
    from django_stubs_ext import StrPromise

EXCERPT_CHARACTERS = 200


def _shown() -> Q:
    """Notifications still worth showing: those about a comment only while it is published (a
    reply deleted since is not news any more); decisions, milestones and queue notices always.
    Held comments are told by email only: the console is where moderators see them."""
    return (~Q(kind__in=COMMENT_KINDS) | Q(comment__status=Status.PUBLISHED)) & ~Q(kind=Kind.HELD)


def unread_count(*, user_id: int) -> int:
    """The widget's badge: one index scan of the recipient's unread rows
    (``notification_unread``)."""
    return Notification.objects.filter(_shown(), recipient_id=user_id, read_at__isnull=True).count()


def excerpt(body: str, *, length: int = EXCERPT_CHARACTERS) -> str:
    """The first ``length`` characters of a comment's text on one line, for lists and emails."""
    text = " ".join(body.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


def inbox(*, user_id: int, limit: int, cursor: str | None, unread_only: bool = False) -> Page:
    """A reader's notifications, newest first, keyset-paginated on the id: four queries
    (the rows, their comments' text, the people and subjects they name) whatever the page."""
    scope = f"notifications:{user_id}:{int(unread_only)}"
    position = decode_cursor(cursor=cursor, scope=scope)
    rows = Notification.objects.filter(_shown(), recipient_id=user_id)
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    if position is not None:
        after = position.get("k")
        if not isinstance(after, int) or isinstance(after, bool):
            raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
        rows = rows.filter(id__lt=after)
    found = list(
        rows.order_by("-id").values(
            "id",
            "kind",
            "actor_id",
            "subject_id",
            "comment_id",
            "data",
            "created_at",
            "read_at",
            "comment__root_id",
            "comment__reply_to_id",
        )[: limit + 1]
    )
    page = found[:limit]
    next_cursor = encode_cursor(scope=scope, position={"k": page[-1]["id"]}) if len(found) > limit else None
    return Page(items=present_notifications(rows=page), next_cursor=next_cursor)


def present_notifications(*, rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The API shape of notification rows (``inbox``'s values): three queries for any number."""
    bodies = dict(
        CommentContent.objects.filter(pk__in={r["comment_id"] for r in rows if r["comment_id"]}).values_list(
            "pk", "body"
        )
    )
    people = rowsql.user_faces({r["actor_id"] for r in rows if r["actor_id"]})
    subjects = {
        s["id"]: s
        for s in Subject.objects.filter(pk__in={r["subject_id"] for r in rows if r["subject_id"]}).values(
            "id", "key", "title", "url", "site__key"
        )
    }
    items = []
    for r in rows:
        subject = subjects.get(r["subject_id"])
        comment = None
        if r["comment_id"]:
            comment = {
                "id": r["comment_id"],
                "root_id": r["comment__root_id"],
                "reply_to_id": r["comment__reply_to_id"],
                "excerpt": excerpt(bodies.get(r["comment_id"], "")),
            }
        items.append(
            {
                "id": r["id"],
                "kind": r["kind"],
                "read": r["read_at"] is not None,
                "created_at": r["created_at"],
                "actor": present_user(people.get(r["actor_id"])),
                "subject": None
                if subject is None
                else {
                    "id": subject["id"],
                    "site": subject["site__key"],
                    "key": subject["key"],
                    "title": subject["title"],
                    "url": subject["url"],
                },
                "comment": comment,
                "data": r["data"] or {},
            }
        )
    return items


def notification_of(*, user_id: int, notification_id: int) -> Notification:
    found = Notification.objects.filter(pk=notification_id, recipient_id=user_id).first()
    if found is None:
        raise NotFound("Unknown notification.")
    return found


# --- preferences and subscriptions -----------------------------------------------------------


def preferences_of(*, user_id: int) -> Preferences:
    """The reader's preferences, the defaults (unsaved) when they never changed any."""
    return Preferences.objects.filter(pk=user_id).first() or Preferences(user_id=user_id)


def present_preferences(preferences: Preferences) -> dict:
    return {
        "language": preferences.language,
        "like_milestones": preferences.like_milestones,
        "email": {kind: getattr(preferences, email_field(kind)) for kind in DEFAULT_EMAIL},
    }


def subscription_state(*, user_id: int, subject_id: int) -> str:
    """``subscribed``, ``muted`` or ``none``."""
    state = Subscription.objects.filter(user_id=user_id, subject_id=subject_id).values_list("state", flat=True).first()
    return state or "none"


# What each kind of email is about, as an unsubscribe page names it.
KIND_NAMES: dict[str, StrPromise] = {
    Kind.REPLY: gettext_lazy("replies to your comments"),
    Kind.MENTION: gettext_lazy("mentions of you"),
    Kind.SUBSCRIPTION: gettext_lazy("new comments in discussions you follow"),
    Kind.LIKE_MILESTONE: gettext_lazy("likes your comments reached"),
    Kind.DECISION: gettext_lazy("moderators' decisions on your comments"),
    Kind.QUEUE: gettext_lazy("the review queues of your sites"),
    Kind.HELD: gettext_lazy("comments held for review on your sites"),
}


def unsubscribe_description(*, scope: Scope, language: str) -> str:
    """What an unsubscribe link turns off, in words, in ``language``: one query at most."""
    with translation.override(language):
        if scope.subject_id is not None:
            subject = Subject.objects.filter(pk=scope.subject_id).values_list("title", "key").first()
            title = (subject[0] or subject[1]) if subject else ""
            return _("Emails about “%(title)s”.") % {"title": title}
        return _("Emails about %(kinds)s.") % {"kinds": _(", ").join(str(KIND_NAMES[k]) for k in scope.kinds)}


# --- held comments' decision links -------------------------------------------------------------


@dataclass(frozen=True)
class HeldComment:
    """What a decision link's page shows: the comment and whether it still waits."""

    moderator: User
    site_name: str
    title: str
    author: str
    body: str
    waiting: bool  # its review task is open: the link may still decide
    decision: str  # when not waiting: how it was decided ("approve", "reject", ...; "" unknown)
    decided_by: str  # ... and by whom ("" for the system or unknown)
    decided_at: datetime | None


def held_comment_of(*, link: DecisionLink) -> HeldComment:
    """The comment a decision link names, with the checks made when the link is used:
    ``PermissionDenied`` when its moderator is inactive, gone or no longer moderates the site;
    ``NotFound`` when the comment or its task is gone or not the site's. Five queries."""
    moderator = User.objects.filter(pk=link.moderator_id, is_active=True).first()
    if moderator is None or not is_site_moderator(user=moderator, site=link.site_id):
        raise PermissionDenied("You no longer moderate this site.")
    comment = (
        Comment.objects.filter(pk=link.comment_id)
        .values("subject_id", "subject__site_id", "subject__site__name", "subject__title", "subject__key", "author_id")
        .first()
    )
    if comment is None or comment["subject__site_id"] != link.site_id:
        raise NotFound("Unknown comment.")
    task = (
        ReviewTask.objects.filter(pk=link.task_id, comment_id=link.comment_id, subject_id=comment["subject_id"])
        .values("state", "decision", "decided_by__display_name", "decided_by__username", "decided_at")
        .first()
    )
    if task is None:
        raise NotFound("Unknown comment.")
    body = CommentContent.objects.filter(pk=link.comment_id).values_list("body", flat=True).first() or ""
    face = rowsql.user_faces([comment["author_id"]]).get(comment["author_id"]) if comment["author_id"] else None
    return HeldComment(
        moderator=moderator,
        site_name=comment["subject__site__name"],
        title=comment["subject__title"] or comment["subject__key"],
        author=(face.display_name or face.username) if face else "",
        body=body,
        waiting=task["state"] == TaskState.OPEN,
        decision=task["decision"],
        decided_by=task["decided_by__display_name"] or task["decided_by__username"] or "",
        decided_at=task["decided_at"],
    )


def site_moderator_email(*, site: Site, user: User) -> dict:
    """How the site's moderators are emailed about held comments (API.md, "Moderators'
    emails"); its moderators only. One query after the check."""
    if not is_site_moderator(user=user, site=site):
        raise PermissionDenied("Only moderators of this site may see how its moderators are emailed.")
    row = SiteModeratorEmail.objects.filter(site=site).first() or SiteModeratorEmail(site=site, held=HeldEmail.AUTO)
    return {
        "site": site.key,
        "held": row.held,
        "held_per_day": row.held_per_day,
        "default_held_per_day": settings.NOTIFICATIONS_HELD_PER_DAY,
    }


def host_email_of(*, user: User) -> str:
    """The address the host's SSO last named for ``user`` (its payload's ``email``), on the site
    their token is for, else on any site; "" when no host named one."""
    identities = ExternalIdentity.objects.filter(user_id=user.pk).exclude(email="")
    site_id = getattr(user, "token_site_id", None)
    if site_id is not None:
        identities = identities.filter(site_id=site_id)
    return identities.order_by("-created_at").values_list("email", flat=True).first() or ""


def email_address_state(*, user: User) -> dict:
    """Where the reader's notification emails go: ``address`` (their account's, or "" for none),
    ``offered`` (the host's address they may turn emails on with, when they have none yet) and
    ``from_host`` (whether ``address`` is the host's, which they may turn off here)."""
    host = host_email_of(user=user)
    return {
        "address": user.email,
        "offered": host if host and not user.email else None,
        "from_host": bool(host) and user.email == host,
    }
