"""Who is told of what: an event (a comment published, a moderator's decision, a like
milestone, a filling review queue) becomes one ``Notification`` row per recipient.

Every write here is a set-based ``INSERT ... SELECT ... ON CONFLICT DO NOTHING`` over the user
table: the recipients, their preferences (the email each row gets) and whether they may see the
comment are all decided by the database in the statement, so 10,000 subscribers cost one
statement, and running an event again (a retried task, a replayed stream entry) inserts nothing
(``notification_once_per_event``).

Rules kept here, for every kind: nobody is told about their own comment; nobody is told about a
comment that is not published (pending, shadow, deleted and rejected comments notify no one; a
held comment notifies when a moderator approves it); nobody is told about a comment they may
not see (a friends-only comment reaches only the author's mutual followers and the site's
moderators); inactive users are told nothing.

The one kind about a comment that is *not* published is ``held``: a comment held for review
(posted ``pending``, or held later) is told to its site's moderators, for them to decide from
the email (``held_notify``, docs/operations.md "Held comments by email").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, FilteredRelation, Max, Q
from django.utils import timezone

from comments import rowsql
from comments.ids import id_floor_at
from comments.models import Comment, Site, Status, User, Visibility
from moderation.models import ReviewTask, TaskState

from .events import EDITED, POSTED, STATUS, Event
from .models import (
    DEFAULT_EMAIL,
    EmailMode,
    EmailState,
    HeldEmail,
    Kind,
    Notification,
    Preferences,
    SiteModeratorEmail,
    Subscription,
    SubscriptionState,
    email_field,
)

_q = connection.ops.quote_name
_NOTIFICATION = _q(Notification._meta.db_table)
_USER = _q(User._meta.db_table)
_PREFERENCES = _q(Preferences._meta.db_table)
_SUBSCRIPTION = _q(Subscription._meta.db_table)
_MODERATORS = _q(Site.moderators.through._meta.db_table)
_COMMENT = _q(Comment._meta.db_table)


def _typed(sql_type: str) -> str:
    """A parameter in a SELECT list: PostgreSQL gives it no type from the target column there."""
    return f"CAST(%s AS {sql_type})" if connection.vendor == "postgresql" else "%s"


def _email_sql(kind: str, subject_id: int | None, *, digest: bool = False) -> tuple[str, list]:
    """The email state a new row of ``kind`` gets for the user ``u`` (preferences ``p``): none
    when they muted the subject (``subject_id``; None: no need to look), else as their
    preference for the kind says; ``digest``: what they want at once waits for the digest."""
    mode = f"COALESCE(p.{email_field(kind)}, '{DEFAULT_EMAIL[kind]}')"
    now = EmailState.DIGEST if digest else EmailState.QUEUED
    decided = (
        f"CASE {mode} WHEN '{EmailMode.IMMEDIATELY}' THEN '{now}' "
        f"WHEN '{EmailMode.DAILY}' THEN '{EmailState.DIGEST}' ELSE '{EmailState.NONE}' END"
    )
    if subject_id is None:
        return decided, []
    # Not correlated to ``u``: the subject's muted readers are read once (a hashed subplan), and
    # on Citus from the subject's shard, whose tables the local notifications cannot join.
    muted = (
        f"u.id IN (SELECT m.user_id FROM {_SUBSCRIPTION} m WHERE m.subject_id = %s "
        f"AND m.state = '{SubscriptionState.MUTED}')"
    )
    return f"CASE WHEN {muted} THEN '{EmailState.NONE}' ELSE {decided} END", [subject_id]


@dataclass(frozen=True)
class Cause:
    """What a notification is about, the same for each of its recipients."""

    event: str
    site_id: int | None
    subject_id: int | None = None
    comment_id: int | None = None
    actor_id: int | None = None
    data: dict | None = None


def _notify(
    kind: str,
    cause: Cause,
    recipients: str,
    params: list,
    *,
    not_user: int | None = None,
    followers: bool = False,
    digest: bool = False,
) -> int:
    """Insert a ``kind`` notification of ``cause`` for each active user ``u`` matching
    ``recipients`` (SQL over the user table ``u`` and their preferences ``p``), except
    ``not_user``, unless they have one of the event already. Returns how many were inserted.
    ``followers``: the recipients follow the subject, so none of them muted it (or muting it
    does not apply); ``digest``: the emails wait for the recipients' digests."""
    email, email_params = _email_sql(kind, None if followers else cause.subject_id, digest=digest)
    json_type = "jsonb" if connection.vendor == "postgresql" else "text"
    where = f"u.is_active AND {recipients}"
    where_params = list(params)
    if not_user is not None:
        where += " AND u.id <> %s"
        where_params.append(not_user)
    # The recipients are read first, as a query of their own: on Citus an INSERT ... SELECT into
    # the coordinator's notifications cannot plan a subquery over a subject's shard (its
    # subscribers, its muted readers) beside the users; a SELECT can, and hands its rows over.
    sql = (
        f"WITH recipient AS MATERIALIZED (SELECT u.id, {email} AS email "
        f"FROM {_USER} u LEFT JOIN {_PREFERENCES} p ON p.user_id = u.id WHERE {where}) "
        f"INSERT INTO {_NOTIFICATION} (recipient_id, kind, event, site_id, subject_id, comment_id, actor_id, data, "
        "created_at, email) "
        f"SELECT r.id, {_typed('text')}, {_typed('text')}, {_typed('bigint')}, {_typed('bigint')}, {_typed('bigint')}, "
        f"{_typed('bigint')}, {_typed(json_type)}, {_typed('timestamptz')}, r.email FROM recipient r WHERE true "
        # The rows written, counted as they come back: Citus reports an INSERT ... SELECT it
        # pulled through the coordinator as every row offered, those ON CONFLICT skipped too.
        "ON CONFLICT (recipient_id, event) DO NOTHING RETURNING recipient_id"
    )
    values = [
        kind,
        cause.event,
        cause.site_id,
        cause.subject_id,
        cause.comment_id,
        cause.actor_id,
        json.dumps(cause.data or {}),
        connection.ops.adapt_datetimefield_value(timezone.now()),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*email_params, *where_params, *values])
        return len(cursor.fetchall())


def _readers_sql(*, visibility: str, author_id: int | None, site_id: int) -> tuple[str, list]:
    """Users ``u`` who may read a published comment of ``visibility`` by ``author_id`` on the
    site: the SQL twin of ``comments.queries.can_see`` for published comments (a public one
    everyone; a friends-only one the author's mutual followers and the site's moderators)."""
    if visibility == Visibility.PUBLIC:
        return "1 = 1", []
    friends, params = rowsql.friends_sql(author_id) if author_id is not None else ("SELECT NULL", [])
    # Subqueries not correlated to ``u``, read once each: Citus plans no correlated subquery
    # beside a reference table (the users).
    return (
        f"(u.is_staff OR u.id IN ({friends}) OR u.id IN (SELECT sm.user_id FROM {_MODERATORS} sm "
        "WHERE sm.site_id = %s))",
        [*params, site_id],
    )


def comment_event(comment_id: int) -> str:
    return f"c{comment_id}"


class _CommentFacts(NamedTuple):
    """What deciding a comment's recipients needs of it, read in one query."""

    status: str
    visibility: str
    author_id: int | None
    subject_id: int
    depth: int
    site_id: int
    replied_to: int | None
    mentions: list | None


def _comment_facts(comment_ids) -> dict[int, _CommentFacts]:
    # The replied-to comment and the content are joined on the subject as well as the id: the
    # tables are sharded by subject, and Citus joins only on the distribution column.
    rows = (
        Comment.objects.filter(pk__in=comment_ids)
        .annotate(
            target=FilteredRelation("reply_to", condition=Q(reply_to__subject_id=F("subject_id"))),
            own_content=FilteredRelation("content", condition=Q(content__subject_id=F("subject_id"))),
        )
        .values_list(
            "pk",
            "status",
            "visibility",
            "author_id",
            "subject_id",
            "depth",
            "subject__site_id",
            "target__author_id",
            "own_content__mentions",
        )
    )
    return {pk: _CommentFacts(*rest) for pk, *rest in rows}


def _followed_subjects(subject_ids) -> set[int]:
    """Of ``subject_ids``, those someone follows (one query for a whole batch of events)."""
    if not subject_ids:
        return set()
    return set(
        Subscription.objects.filter(subject_id__in=subject_ids, state=SubscriptionState.SUBSCRIBED)
        .values_list("subject_id", flat=True)
        .distinct()
    )


def comment_notify(
    *,
    comment_id: int,
    subscribers: bool = True,
    facts: _CommentFacts | None = None,
    subject_followed: bool | None = None,
) -> int:
    """Tell of a published comment whom it answers, whom it mentions and, for a top-level
    comment when ``subscribers``, everyone who follows its subject: each of them once (the
    most specific kind wins: reply, then mention, then subscription), in one transaction.
    Returns how many notifications were written; 0 for a comment that is not published.

    ``facts`` and ``subject_followed`` come from a caller that read them for a whole batch of
    events; with them, a comment that answers nobody, mentions nobody and whose subject nobody
    follows (most comments of a busy discussion) costs no statement at all."""
    if facts is None:
        facts = _comment_facts([comment_id]).get(comment_id)
    if facts is None:
        return 0
    status, visibility, author_id, subject_id, depth, site_id, replied_to, mentions = facts
    if status != Status.PUBLISHED:
        return 0
    mentioned = [m["id"] for m in mentions or () if isinstance(m, dict) and isinstance(m.get("id"), int)]
    to_followers = subscribers and depth == 0 and subject_followed is not False
    if replied_to is None and not mentioned and not to_followers:
        return 0
    cause = Cause(
        event=comment_event(comment_id),
        site_id=site_id,
        subject_id=subject_id,
        comment_id=comment_id,
        actor_id=author_id,
    )
    readers, readers_params = _readers_sql(visibility=visibility, author_id=author_id, site_id=site_id)
    written = 0
    with transaction.atomic():
        if replied_to is not None:
            written += _notify(
                Kind.REPLY, cause, f"u.id = %s AND {readers}", [replied_to, *readers_params], not_user=author_id
            )
        if mentioned:
            among, among_params = rowsql.any_of("u.id", mentioned)
            written += _notify(
                Kind.MENTION, cause, f"{among} AND {readers}", [*among_params, *readers_params], not_user=author_id
            )
        if to_followers:
            followers = (
                f"u.id IN (SELECT s.user_id FROM {_SUBSCRIPTION} s WHERE s.subject_id = %s "
                f"AND s.state = '{SubscriptionState.SUBSCRIBED}') AND {readers}"
            )
            written += _notify(
                Kind.SUBSCRIPTION, cause, followers, [subject_id, *readers_params], not_user=author_id, followers=True
            )
    return written


# A held (pending) comment's fate, as its author is told it.
DECISIONS: dict[str, str] = {Status.PUBLISHED: "approved", Status.REJECTED: "rejected", Status.DELETED: "removed"}


def status_change_notify(*, comment_id: int, from_status: str, to_status: str, actor_id: int | None) -> int:
    """A comment's status changed: a moderator's decision on a held comment is told to its
    author (a shadow is never told: that is the point of it), and a comment published by a
    moderator after being held or shadowed notifies as a new comment would have."""
    written = 0
    row = Comment.objects.filter(pk=comment_id).values_list("author_id", "subject_id", "subject__site_id").first()
    if row is None:
        return 0
    author_id, subject_id, site_id = row
    decision = DECISIONS.get(to_status)
    if (
        from_status == Status.PENDING
        and decision
        and actor_id is not None
        and author_id is not None
        and actor_id != author_id
    ):
        cause = Cause(
            event=f"d{comment_id}:{decision}",
            site_id=site_id,
            subject_id=subject_id,
            comment_id=comment_id,
            data={"decision": decision},
        )
        written += _notify(Kind.DECISION, cause, "u.id = %s", [author_id])
    if to_status == Status.PUBLISHED and from_status in (Status.PENDING, Status.SHADOW):
        written += comment_notify(comment_id=comment_id)
    return written


def like_milestone(like_count: int) -> int | None:
    """The highest milestone (``NOTIFICATIONS_LIKE_MILESTONES``) a count has reached."""
    reached = [m for m in settings.NOTIFICATIONS_LIKE_MILESTONES if like_count >= m]
    return max(reached) if reached else None


def like_milestones_notify(*, days: int | None = None) -> int:
    """Tell authors who turned like milestones on that a comment of theirs (published in the
    last ``days``) reached one: the highest reached, once per comment and milestone. The
    candidates are the opted-in authors' comments (``comment_user_history``), so the scan is as
    small as the readers who asked for it."""
    if not settings.NOTIFICATIONS_LIKE_MILESTONES:
        return 0
    days = settings.NOTIFICATIONS_LIKE_MILESTONE_DAYS if days is None else days
    candidates = list(
        Comment.objects.filter(
            author__in=Preferences.objects.filter(like_milestones=True).values("user_id"),
            status=Status.PUBLISHED,
            like_count__gte=min(settings.NOTIFICATIONS_LIKE_MILESTONES),
            id__gte=id_floor_at(timezone.now() - timedelta(days=days)),
        ).values_list("pk", "author_id", "like_count", "subject_id", "subject__site_id")
    )
    events = {pk: f"l{pk}:{like_milestone(count)}" for pk, _, count, _, _ in candidates}
    told = set(
        Notification.objects.filter(
            recipient_id__in={a for _, a, _, _, _ in candidates}, event__in=events.values()
        ).values_list("event", flat=True)
    )
    written = 0
    for pk, author_id, count, subject_id, site_id in candidates:
        if events[pk] in told:
            continue
        cause = Cause(
            event=events[pk],
            site_id=site_id,
            subject_id=subject_id,
            comment_id=pk,
            data={"likes": like_milestone(count)},
        )
        written += _notify(Kind.LIKE_MILESTONE, cause, "u.id = %s AND p.like_milestones", [author_id])
    return written


def events_notify(events: list[Event]) -> int:
    """The notifications of a batch of events (``events``), each in its own transaction, so
    a worker that dies midway leaves whole events behind it; returns how many were written.
    An edit notifies only whom it newly mentions: whom the comment answers and the subject's
    subscribers were told when it was published. The comments of the batch's posts and edits,
    and which of their subjects anyone follows, are read for the whole batch in two queries."""
    commented = {e.target_id for e in events if e.type in (POSTED, EDITED)}
    facts = _comment_facts(commented) if commented else {}
    followed = _followed_subjects(
        {f.subject_id for f in facts.values() if f.depth == 0 and f.status == Status.PUBLISHED}
    )
    written = 0
    for event in events:
        if event.type in (POSTED, EDITED):
            known = facts.get(event.target_id)
            if known is None:
                continue  # gone before its event was handled: nobody to tell
            if event.type == POSTED and known.status == Status.PENDING:
                written += held_notify(comment_id=event.target_id, hold=event.id, facts=known)
                continue
            written += comment_notify(
                comment_id=event.target_id,
                subscribers=event.type == POSTED,
                facts=known,
                subject_followed=known.subject_id in followed,
            )
        elif event.type == STATUS:
            _, from_status, to_status, _ = event.fields
            written += status_change_notify(
                comment_id=event.target_id,
                from_status=from_status,
                to_status=to_status,
                actor_id=event.actor_id,
            )
            if to_status == Status.PENDING and from_status != Status.PENDING:
                written += held_notify(comment_id=event.target_id, hold=event.id)
    return written


def held_email_of(*, site_id: int) -> tuple[str, int]:
    """How the site's moderators are emailed about held comments, and the held comments a day
    past which ``auto`` moves to the digest: its ``SiteModeratorEmail``, or the defaults."""
    row = SiteModeratorEmail.objects.filter(site_id=site_id).values_list("held", "held_per_day").first()
    held, per_day = row or (HeldEmail.AUTO, None)
    return held, settings.NOTIFICATIONS_HELD_PER_DAY if per_day is None else per_day


def _held_lately(*, site_id: int, comment_id: int, now: datetime, up_to: int) -> int:
    """The other comments of the site its moderators were told were held in the last 24 hours,
    counted up to ``up_to`` (one range of ``notification_held_by_site``, cut short there)."""
    told = (
        Notification.objects.filter(kind=Kind.HELD, site_id=site_id, created_at__gt=now - timedelta(days=1))
        .exclude(comment_id=comment_id)
        .values("comment_id")
        .distinct()
    )
    return len(told[:up_to])


def held_notify(*, comment_id: int, hold: str, facts: _CommentFacts | None = None, now: datetime | None = None) -> int:
    """Tell the moderators of its site that a comment is held for review (``hold`` names this
    hold: the event's id, so a replay writes nothing and a comment held again later is told
    again). Each is emailed as the site's ``SiteModeratorEmail`` says: ``each``, or ``auto``
    while the site held fewer than its number a day, one email per comment; ``digest``, or
    ``auto`` past that number, in their daily digest; ``off``, nothing. Their own preference for
    ``held`` comes on top (``never``: no email). Not the author, should a moderator's own comment
    be held. Returns how many were written; 0 for a comment no longer held. Three queries and
    one insert however many moderators (``facts`` from the caller's batch: two)."""
    if facts is None:
        facts = _comment_facts([comment_id]).get(comment_id)
    if facts is None or facts.status != Status.PENDING:
        return 0
    held, per_day = held_email_of(site_id=facts.site_id)
    if held == HeldEmail.OFF:
        return 0
    digest = held == HeldEmail.DIGEST or (
        held == HeldEmail.AUTO
        and _held_lately(site_id=facts.site_id, comment_id=comment_id, now=now or timezone.now(), up_to=per_day)
        >= per_day
    )
    cause = Cause(
        event=f"h{comment_id}:{hold}"[:64],
        site_id=facts.site_id,
        subject_id=facts.subject_id,
        comment_id=comment_id,
        actor_id=facts.author_id,
    )
    moderators = f"u.id IN (SELECT sm.user_id FROM {_MODERATORS} sm WHERE sm.site_id = %s)"
    # ``followers``: a moderator who muted the discussion is still asked to decide on it.
    return _notify(
        Kind.HELD, cause, moderators, [facts.site_id], not_user=facts.author_id, followers=True, digest=digest
    )


def review_queues_notify(*, now: datetime | None = None) -> int:
    """Tell the moderators of each site whose open review queue holds at least
    ``NOTIFICATIONS_QUEUE_THRESHOLD`` comments, at most once per ``NOTIFICATIONS_QUEUE_PERIOD``
    for a site: a ``queue`` notification each (emailed as their preference for the kind says),
    with how many wait and how many arrived in the last period. One grouped count of the open
    tasks, then per site past the threshold two queries and one insert.

    Not for a site whose moderators are emailed each held comment (``SiteModeratorEmail`` other
    than ``off``): each of those comments reached them already, with its links, and a notice
    of the same queue would tell them the same thing twice."""
    now = now or timezone.now()
    period = settings.NOTIFICATIONS_QUEUE_PERIOD
    window = int(now.timestamp() // period)
    full = list(
        ReviewTask.objects.filter(state=TaskState.OPEN)
        .values("site_id")
        .annotate(open=Count("id"), newest=Max("id"))
        .filter(open__gte=settings.NOTIFICATIONS_QUEUE_THRESHOLD)
    )
    held_off = set(
        SiteModeratorEmail.objects.filter(site_id__in=[s["site_id"] for s in full], held=HeldEmail.OFF).values_list(
            "site_id", flat=True
        )
    )
    written = 0
    for site in full:
        site_id = site["site_id"]
        if site_id not in held_off:
            continue
        moderators = list(Site.moderators.through.objects.filter(site_id=site_id).values_list("user_id", flat=True))
        if not moderators:
            continue
        # The event names the period, so a notice is written once per period whatever runs; the
        # last one, in this or the previous period, must also be a whole period old.
        events = [f"q{site_id}:{window}", f"q{site_id}:{window - 1}"]
        if Notification.objects.filter(
            recipient_id__in=moderators,
            event__in=events,
            created_at__gt=now - timedelta(seconds=period),
        ).exists():
            continue
        new = ReviewTask.objects.filter(
            site_id=site_id,
            state=TaskState.OPEN,
            created_at__gt=now - timedelta(seconds=period),
        ).count()
        key = Site.objects.filter(pk=site_id).values_list("key", flat=True).first()
        cause = Cause(
            event=events[0],
            site_id=site_id,
            data={"site": key, "open": site["open"], "new": new, "newest": site["newest"]},
        )
        among, among_params = rowsql.any_of("u.id", moderators)
        written += _notify(Kind.QUEUE, cause, among, among_params)
    return written
