"""Every read of the notifications app, each with a bounded number of queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from comments import rowsql
from comments.exceptions import InvalidInput, NotFound
from comments.models import CommentContent, Status, Subject
from comments.queries import Page, decode_cursor, encode_cursor, present_user

from .models import COMMENT_KINDS, DEFAULT_EMAIL, Kind, Notification, Preferences, Subscription, email_field
from .unsubscribe import Scope

if TYPE_CHECKING:
    from django_stubs_ext import StrPromise

EXCERPT_CHARACTERS = 200


def _shown() -> Q:
    """Notifications still worth showing: those about a comment only while it is published (a
    reply deleted since is not news any more); decisions, milestones and queue notices always."""
    return ~Q(kind__in=COMMENT_KINDS) | Q(comment__status=Status.PUBLISHED)


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
}


def unsubscribe_description(*, scope: Scope, language: str) -> str:
    """What an unsubscribe link turns off, in words, in ``language``: one query at most."""
    with translation.override(language):
        if scope.subject_id is not None:
            subject = Subject.objects.filter(pk=scope.subject_id).values_list("title", "key").first()
            title = (subject[0] or subject[1]) if subject else ""
            return _("Emails about “%(title)s”.") % {"title": title}
        return _("Emails about %(kinds)s.") % {"kinds": _(", ").join(str(KIND_NAMES[k]) for k in scope.kinds)}
