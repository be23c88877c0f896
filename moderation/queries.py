"""Every read of the moderation app."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Count, Min, Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from comments import rowsql
from comments.exceptions import InvalidInput, NotFound, PermissionDenied
from comments.models import Site, Subject, User
from comments.queries import (
    Page,
    Viewer,
    comment_chain,
    comment_for_viewer,
    comment_tree,
    decode_cursor,
    encode_cursor,
    is_site_moderator,
    page_by_id,
    present_comments,
    present_user,
    site_by_key,
)
from comments.queries.visibility import authenticated

from .models import AuditEntry, Report, ReviewTask, Sanction, TaskState, WordEntry
from .snapshots import Snapshot

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser


def _site_sanctions(site_id: int) -> dict[int, list[tuple[str, float | None]]]:
    """Every sanction of the site, by user: ``(kind, until as a timestamp or None)``."""
    found: dict[int, list[tuple[str, float | None]]] = {}
    for user_id, kind, until in Sanction.objects.filter(site_id=site_id).values_list("user_id", "kind", "until"):
        found.setdefault(user_id, []).append((kind, until.timestamp() if until else None))
    return found


# Every like, report, post and edit asks for the author's standing, and sanctions are few and
# rarely change: each process keeps a site's sanctions in memory (one query per site per
# change) and learns of changes through the snapshot's version, within
# ``MODERATION_WORDS_RECHECK`` seconds; the process that made the change, at once.
SANCTIONS: Snapshot[dict[int, list[tuple[str, float | None]]]] = Snapshot(
    "moderation:sanctions:version", _site_sanctions
)


def standing_of(*, site_id: int, user_id: int) -> set[str]:
    """The kinds of sanction in force for ``user_id`` on the site now. Expired ones are simply
    not counted, so no job has to end them."""
    sanctions = SANCTIONS.get(site_id).get(user_id)
    if not sanctions:
        return set()
    now = time.time()
    return {kind for kind, until in sanctions if until is None or until > now}


def _viewer_moderating(user: User, site_key: str) -> tuple[Site, Viewer]:
    """The site and a moderator's viewer of it; ``PermissionDenied`` for anyone else."""
    site = site_by_key(site_key=site_key)
    if not is_site_moderator(user=user, site=site):
        raise PermissionDenied("Only moderators of this site may see this.")
    return site, Viewer(user=user, is_moderator=True)


# Kinds of review reason (the part before ":" in ``ReviewTask.reasons``), for filtering.
REASON_KINDS = ("report", "word", "spam", "policy")


def review_queue(
    *,
    user: User,
    site_key: str,
    state: str,
    limit: int,
    cursor: str | None,
    reason: str | None = None,
    older_than: timedelta | None = None,
) -> Page:
    """A site's review tasks, highest priority first, then oldest, each with its comment as a
    moderator sees it. Keyset-paginated on (priority, id): four queries whatever the page.
    ``reason`` keeps tasks with a reason of that kind (``REASON_KINDS``), ``older_than`` tasks
    opened at least that long ago (the console's filters)."""
    site, viewer = _viewer_moderating(user, site_key)
    if reason is not None and reason not in REASON_KINDS:
        raise InvalidInput("Unknown reason.", fields={"reason": [f"Must be one of {list(REASON_KINDS)}."]})
    scope = f"queue:{site.pk}:{state}"
    if reason is not None or older_than is not None:
        scope += f":{reason or ''}:{int(older_than.total_seconds()) if older_than else ''}"
    position = decode_cursor(cursor=cursor, scope=scope)
    tasks = ReviewTask.objects.filter(site=site, state=state).select_related("claimed_by")
    if reason is not None:
        # Reasons are a JSON list of "kind:detail" strings; its text holds '"kind:' exactly
        # when one of them is of that kind (the same on PostgreSQL's jsonb and SQLite's text).
        tasks = tasks.annotate(reasons_text=Cast("reasons", TextField())).filter(reasons_text__contains=f'"{reason}:')
    if older_than is not None:
        tasks = tasks.filter(created_at__lte=timezone.now() - older_than)
    if position is not None:
        priority, last_id = position.get("p"), position.get("i")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (priority, last_id)):
            raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
        tasks = tasks.filter(Q(priority__lt=priority) | Q(priority=priority, id__gt=last_id))
    found = list(tasks.order_by("-priority", "id")[: limit + 1])
    page = found[:limit]
    rows = {c.pk: c for c in rowsql.fetch_ids({t.comment_id for t in page})}
    shown = present_comments(rows=rows.values(), viewer=viewer)
    items = [_task_item(t, shown) for t in page]
    next_cursor = (
        encode_cursor(scope=scope, position={"p": page[-1].priority, "i": page[-1].pk}) if len(found) > limit else None
    )
    return Page(items=items, next_cursor=next_cursor)


def _task_item(t: ReviewTask, shown: dict[int, dict]) -> dict:
    """A review task as the queue shows it (``claimed_by`` only while the claim runs)."""
    return {
        "id": t.pk,
        "comment": shown.get(t.comment_id),
        "reasons": t.reasons,
        "priority": t.priority,
        "state": t.state,
        "claimed_by": present_user(t.claimed_by)
        if t.claimed_by_id and t.claim_expires_at and t.claim_expires_at > timezone.now()
        else None,
        "created_at": t.created_at,
        "decided_at": t.decided_at,
        "decision": t.decision or None,
    }


def audit_log(*, user: User, site_key: str, limit: int, cursor: str | None) -> Page:
    """A site's audit entries, newest first (staff also see changes to the global list)."""
    site, _ = _viewer_moderating(user, site_key)
    entries = AuditEntry.objects.select_related("actor")
    entries = entries.filter(Q(site=site) | Q(site__isnull=True)) if user.is_staff else entries.filter(site=site)
    page = page_by_id(rows=entries, scope=f"log:{site.pk}", cursor=cursor, limit=limit, newest_first=True)
    page.items = [
        {
            "id": e.pk,
            "actor": present_user(e.actor),
            "action": e.action,
            "comment_id": e.comment_id,
            "from_status": e.from_status,
            "to_status": e.to_status,
            "reason": e.reason,
            "channel": e.channel,
            "created_at": e.created_at,
        }
        for e in page.items
    ]
    return page


def moderator_acted_since(*, comment_id: int, since: datetime) -> bool:
    """Whether a moderator took any action on the comment (each is a decision on it, and closes
    its review tasks) at ``since`` or later. One probe of ``audit_decisions_by_comment``."""
    return AuditEntry.objects.filter(comment_id=comment_id, actor__isnull=False, created_at__gte=since).exists()


def word_entries(*, user: User, site_key: str | None, limit: int, cursor: str | None) -> Page:
    """A page of the global list and, with ``site_key``, that site's list (its moderators
    only), oldest entry first: ``WordEntry`` items."""
    if site_key is None:
        if not user.is_staff:
            raise PermissionDenied("Name a site you moderate.")
        return page_by_id(rows=WordEntry.objects.filter(site__isnull=True), scope="words:*", cursor=cursor, limit=limit)
    site, _ = _viewer_moderating(user, site_key)
    return page_by_id(
        rows=WordEntry.objects.filter(Q(site=site) | Q(site__isnull=True)).select_related("site"),
        scope=f"words:{site.pk}",
        cursor=cursor,
        limit=limit,
    )


# --- the console ---------------------------------------------------------------------------


def moderated_sites(*, user: User | AnonymousUser | None) -> list[Site]:
    """The sites ``user`` moderates, by key: every site for staff (at most 500: the console's
    site picker), their own for site moderators, none for anyone else. One query."""
    user = authenticated(user)
    if user is None:
        return []
    sites = Site.objects.all() if user.is_staff else Site.objects.filter(moderators=user)
    return list(sites.order_by("key")[:500])


REPORTS_SHOWN = 50  # a comment's reports on its task page, oldest first


def review_task_in_context(*, user: User, task_id: int, replies: int = 50) -> dict:
    """One review task with its comment in context, as a moderator sees it (true statuses):
    the chain from the top-level comment down to it, and its subtree (first ``replies``
    comments below it, depth-first), and the readers' reports of it. ``NotFound`` for an
    unknown task, ``PermissionDenied`` unless ``user`` moderates its site. Eight queries."""
    task = ReviewTask.objects.select_related("claimed_by", "site").filter(pk=task_id).first()
    if task is None:
        raise NotFound("Unknown task.")
    if not is_site_moderator(user=user, site=task.site):
        raise PermissionDenied("Only moderators of this site may see this.")
    comment, viewer = comment_for_viewer(comment_id=task.comment_id, user=user)
    chain = comment_chain(comment=comment, viewer=viewer)
    tree = comment_tree(comment=comment, viewer=viewer, limit=replies + 1, cursor=None)
    below = [c for c in tree.items if c["id"] != comment.pk]
    return {
        "task": _task_item(task, {comment.pk: chain[-1]}),
        "site": task.site,
        "subject": comment.subject,
        "comment": chain[-1],
        "chain": chain[:-1],
        "replies": below[:replies],
        "more_replies": len(below) > replies or tree.next_cursor is not None,
        "author_id": comment.author_id,
        "reports": [
            {"reason": r.reason, "detail": r.detail, "reporter": present_user(r.user), "created_at": r.created_at}
            for r in Report.objects.filter(comment_id=comment.pk).select_related("user").order_by("id")[:REPORTS_SHOWN]
        ],
    }


def subjects_by_id(*, ids: Iterable[int]) -> dict[int, Subject]:
    """Subjects (title, key, url) by id, one query: the queue names what each comment is on."""
    ids = set(ids)
    if not ids:
        return {}
    return {s.pk: s for s in Subject.objects.filter(pk__in=ids).only("id", "key", "title", "url", "site_id")}


def sanction_list(*, user: User, site_key: str, limit: int = 200) -> list[Sanction]:
    """A site's sanctions, newest first, with their users (its moderators only); ``in_force``
    tells whether each still applies."""
    site, _ = _viewer_moderating(user, site_key)
    now = timezone.now()
    sanctions = list(Sanction.objects.filter(site=site).select_related("user", "created_by").order_by("-id")[:limit])
    for sanction in sanctions:
        sanction.in_force = sanction.until is None or sanction.until > now  # type: ignore[attr-defined]  # for the page
    return sanctions


def user_by_reference(*, reference: str) -> User:
    """A user named by id or by username (what a moderator types); ``NotFound`` otherwise."""
    reference = reference.strip()
    user = None
    if reference.isdigit() and len(reference) < 19:
        user = User.objects.filter(pk=int(reference)).first()
    if user is None:
        user = User.objects.filter(username=reference).first()
    if user is None:
        raise NotFound("Unknown user.")
    return user


@dataclass
class DayFigures:
    day: date
    decisions: int
    median_seconds: float | None

    @property
    def median_minutes(self) -> float | None:
        return None if self.median_seconds is None else self.median_seconds / 60


def moderation_dashboard(*, user: User, sites: list[Site], days: int = 14) -> dict:
    """Figures for the console's dashboard over ``sites`` (which the caller moderates): open
    tasks per site with the oldest one's age, and for each of the last ``days`` days (UTC) the
    decisions taken and the median time from a task's opening to its decision. Two queries;
    the median is computed in SQL with window functions (PostgreSQL and SQLite alike)."""
    for site in sites:
        if not is_site_moderator(user=user, site=site):
            raise PermissionDenied("Only moderators of this site may see this.")
    site_ids = [s.pk for s in sites]
    open_rows = open_task_counts(sites=sites)
    open_tasks = [
        {"site": s, "open": open_rows.get(s.pk, {}).get("open", 0), "oldest": open_rows.get(s.pk, {}).get("oldest")}
        for s in sites
    ]
    today = timezone.now().astimezone(UTC).date()
    first_day = today - timedelta(days=days - 1)
    start = datetime.combine(first_day, datetime.min.time(), tzinfo=UTC)
    found = _decisions_by_day(site_ids, start) if site_ids else {}
    per_day = []
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        decisions, median = found.get(day.isoformat(), (0, None))
        per_day.append(DayFigures(day=day, decisions=decisions, median_seconds=median))
    return {"open_tasks": open_tasks, "open_total": sum(o["open"] for o in open_tasks), "days": per_day}


def _decisions_by_day(site_ids: list[int], start: datetime) -> dict[str, tuple[int, float | None]]:
    """``{"YYYY-MM-DD": (decisions, median seconds to decision)}`` for tasks decided since
    ``start``: one statement; the median is the middle row (or the mean of the two middle
    rows) of each day's decisions ordered by time taken."""
    table = connection.ops.quote_name(ReviewTask._meta.db_table)
    if connection.vendor == "postgresql":
        day = "to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
        seconds = "EXTRACT(EPOCH FROM (decided_at - created_at))"
    else:  # SQLite stores UTC text
        day = "strftime('%%Y-%%m-%%d', decided_at)"
        seconds = "((julianday(decided_at) - julianday(created_at)) * 86400.0)"
    marks = ", ".join(["%s"] * len(site_ids))
    sql = f"""
        WITH decided AS (
            SELECT {day} AS day, {seconds} AS secs FROM {table}
            WHERE site_id IN ({marks}) AND state = %s AND decided_at >= %s AND decided_at IS NOT NULL
        ), ranked AS (
            SELECT day, secs,
                   ROW_NUMBER() OVER (PARTITION BY day ORDER BY secs) AS rn,
                   COUNT(*) OVER (PARTITION BY day) AS n
            FROM decided
        )
        SELECT day, MAX(n), AVG(secs) FROM ranked
        WHERE rn IN ((n + 1) / 2, (n + 2) / 2)
        GROUP BY day
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*site_ids, TaskState.DONE, start])
        return {
            row[0]: (int(row[1]), max(0.0, float(row[2])) if row[2] is not None else None) for row in cursor.fetchall()
        }


def open_task_counts(*, sites: list[Site]) -> dict[int, Any]:
    """``{site_id: {"open": n, "oldest": datetime}}`` of open review tasks, one query (the
    queue's index). Sites without open tasks are left out."""
    return {
        row["site_id"]: row
        for row in ReviewTask.objects.filter(state=TaskState.OPEN, site_id__in=[s.pk for s in sites])
        .values("site_id")
        .annotate(open=Count("id"), oldest=Min("created_at"))
        .order_by()
    }


def task_claim_holder(*, user: User, task_id: int) -> dict | None:
    """Who holds a running claim on the task (their public face), if anyone; for moderators
    of its site only (``PermissionDenied``), ``NotFound`` for an unknown task."""
    task = ReviewTask.objects.select_related("claimed_by", "site").filter(pk=task_id).first()
    if task is None:
        raise NotFound("Unknown task.")
    if not is_site_moderator(user=user, site=task.site):
        raise PermissionDenied("Only moderators of this site may see this.")
    running = (
        task.state == TaskState.OPEN and task.claim_expires_at is not None and task.claim_expires_at > timezone.now()
    )
    return present_user(task.claimed_by) if running and task.claimed_by_id else None


def word_entry_by_id(*, word_id: int) -> WordEntry:
    entry = WordEntry.objects.select_related("site").filter(pk=word_id).first()
    if entry is None:
        raise NotFound("Unknown word.")
    return entry


def sanction_by_id(*, sanction_id: int) -> Sanction:
    sanction = Sanction.objects.select_related("site").filter(pk=sanction_id).first()
    if sanction is None:
        raise NotFound("Unknown sanction.")
    return sanction
