"""Every write of the likes app.

A like is answered from Redis (``live``) and reaches the database later, in batches, through
``likes_flush``; without Redis (the embedded default, or Redis down) it is written to the
database at once. Both roads end in ``like_actions_apply``, the one function that writes like
rows and counts, idempotently: applying an action twice, or an older action after a newer
one, changes nothing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import assert_never

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from comments import hooks
from comments import queries as comment_queries
from comments import services as comment_services
from comments.exceptions import NotFound
from comments.models import GONE_STATUSES, Comment, Subject, SubjectState, User
from infra import redislink, streams

from . import bulk_rows, keys, live, queries, state_sync
from .models import Like, StaleLikeState
from .protocol import LikeOutcome

# Direct writes get versions above any stream entry of the same millisecond.
_DIRECT_SEQUENCE = (1 << 20) - 1


@dataclass(frozen=True, slots=True)
class LikeAction:
    """User ``user_id`` likes (or no longer likes) comment ``comment_id`` as of ``version``;
    ``at_ms`` is the like's time (ms since the epoch, as Redis keeps it). ``version`` None:
    newer than anything applied so far."""

    comment_id: int
    user_id: int
    liked: bool
    at_ms: int
    version: int | None = None


# --- the one writer of like rows ------------------------------------------------------------


def like_actions_apply(
    actions: Iterable[LikeAction], *, subject_id: int | None = None, mark_stale: bool = False
) -> dict[int, int]:
    """Write the newest action of each (comment, user) pair that is newer than what its row
    holds, and move ``like_count`` by the difference; ``{comment_id: change}``.

    ``subject_id``: the subject of every action, when the caller knows it (the flush reads one
    subject's stream, a direct like has its comment at hand). Every statement then names it,
    so on Citus each is a router query to that subject's shard (infra.citus); actions on
    comments of another subject are dropped, as those on comments that are gone. Without it
    (an erasure, a user's likes across subjects), the comments' subjects are read first and
    each subject's actions applied as if it had been given, in the one transaction.

    One transaction. Actions on comments or users that no longer exist are dropped. Lock
    order as in the comment core: the subjects' rows first, then like rows, then comments.
    ``mark_stale``: also record the comments as having Redis state that fell behind."""
    newest: dict[tuple[int, int], LikeAction] = {}
    for action in actions:
        pair = (action.comment_id, action.user_id)
        held = newest.get(pair)
        if held is None or _newer(action, held):
            newest[pair] = action
    if not newest:
        return {}
    if subject_id is None:
        subjects = dict(_existing(Comment, "subject_id", {c for c, _ in newest}))
        by_subject: dict[int, list[LikeAction]] = defaultdict(list)
        for (comment_id, _), action in newest.items():
            if comment_id in subjects:
                by_subject[subjects[comment_id]].append(action)
        applied: dict[int, int] = {}
        with transaction.atomic():
            for each in sorted(by_subject):  # subjects in id order, as the lock order has them
                applied.update(like_actions_apply(by_subject[each], subject_id=each, mark_stale=mark_stale))
        return applied
    changes: dict[int, int] = defaultdict(int)
    with transaction.atomic():
        _plan_with_parameters()
        comment_subjects = dict(_existing_comments({c for c, _ in newest}, subject_id))
        users = {pk for pk, _ in _existing(User, "id", {u for _, u in newest})}
        newest = {pair: a for pair, a in newest.items() if pair[0] in comment_subjects and pair[1] in users}
        if not newest:
            return {}
        list(Subject.objects.select_for_update().filter(pk=subject_id).values_list("pk", flat=True))
        pending = dict(newest)
        updates = []
        for _ in range(3):  # a second round only for rows deleted or inserted meanwhile
            if not pending:
                break
            # Pairs without a row get it written in its final state at once: most actions are
            # first likes, so this comes first and usually leaves nothing to look up. A pair
            # that has a row (or one another flush just inserted) is skipped by the insert.
            for comment_id, user_id in _insert_rows(
                [
                    (c, u, comment_subjects[c], a.liked, a.version or _clock_version(), a.at_ms)
                    for (c, u), a in pending.items()
                ]
            ):
                if pending.pop((comment_id, user_id)).liked:
                    changes[comment_id] += 1
            # The rest have rows: locked, and moved to the newest action when it is newer.
            for row_id, comment_id, user_id, active, version in _locked_rows(list(pending), subject_id):
                action = pending.pop((comment_id, user_id))
                new_version = action.version if action.version is not None else max(version + 1, _clock_version())
                if new_version <= version:
                    continue
                # A new like takes the action's time; a repeated one or an unlike keeps the row's.
                updates.append((row_id, action.liked, new_version, action.at_ms, action.liked and not active))
                if action.liked != active:
                    changes[comment_id] += 1 if action.liked else -1
        if pending:
            raise RuntimeError(f"like rows of {len(pending)} pair(s) could be neither inserted nor found")
        _update_rows(updates, subject_id)
        _add_like_counts({c: d for c, d in changes.items() if d}, subject_id)
        if mark_stale:
            now = timezone.now()
            StaleLikeState.objects.bulk_create(
                [
                    StaleLikeState(comment_id=c, subject_id=comment_subjects[c], created_at=now)
                    for c in sorted({c for c, _ in newest})
                ],
                update_conflicts=True,
                unique_fields=["comment_id"],
                update_fields=["subject_id", "created_at"],
            )
    # Counts, and with them hot order, of the pages that show these comments; told after the
    # transaction, whose subject row locks posting waits on, not inside it.
    for subject_id in {comment_subjects[c] for c, d in changes.items() if d}:
        comment_services.pages_change(subject_id)
    return {c: d for c, d in changes.items() if d}


def _newer(action: LikeAction, held: LikeAction) -> bool:
    if action.version is None:
        return True
    return held.version is not None and action.version > held.version


def _clock_version() -> int:
    return (live.now_ms() << 20) | _DIRECT_SEQUENCE


def _plan_with_parameters() -> None:
    """Have PostgreSQL plan this transaction's statements for their parameters each time.

    A statement run a few times on a connection is prepared (config/env.py), and PostgreSQL may
    then settle on a generic plan, made for any parameters. For ``subject_id = $n`` that plan
    expects an average subject's few hundred rows; on a hot subject, the one whose likes are
    flushed most, it read the subject's whole index to find ten comments by id (30-60 ms instead
    of 0.3). A batch's few statements are cheap to plan, so they are planned every time."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan")


_LIKE_TABLE = connection.ops.quote_name(Like._meta.db_table)
_COMMENT_TABLE = connection.ops.quote_name(Comment._meta.db_table)


def _existing(model: type[Model], column: str, ids: set[int]) -> list[tuple[int, int]]:
    """``(id, column)`` of the rows of ``model`` among ``ids``."""
    table = connection.ops.quote_name(model._meta.db_table)
    found = []
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources([("id", "bigint")], [(i,) for i in ids]):
            cursor.execute(f"SELECT t.id, t.{column} FROM {table} t JOIN {source} ON t.id = x.id", params)
            found += cursor.fetchall()
    return found


def _within(alias: str, subject_id: int) -> tuple[str, list]:
    """`` AND alias.subject_id = %s``: the distribution column, so that Citus routes the
    statement (infra.citus)."""
    return f" AND {alias}.subject_id = %s", [subject_id]


def _existing_comments(ids: set[int], subject_id: int) -> list[tuple[int, int]]:
    """``(id, subject_id)`` of the comments among ``ids`` of ``subject_id``."""
    within, within_params = _within("t", subject_id)
    found = []
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources([("id", "bigint")], [(i,) for i in ids]):
            cursor.execute(
                f"SELECT t.id, t.subject_id FROM {_COMMENT_TABLE} t JOIN {source} ON t.id = x.id{within}",
                [*params, *within_params],
            )
            found += cursor.fetchall()
    return found


def _insert_rows(rows: list[tuple[int, int, int, bool, int, int]]) -> list[tuple[int, int]]:
    """Insert like rows (comment, user, subject, active, version, time in ms) for pairs that have
    none; returns the pairs inserted."""
    columns = [("c", "bigint"), ("u", "bigint"), ("s", "bigint"), ("a", "boolean"), ("v", "bigint"), ("t", "ms")]
    inserted = []
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources(columns, rows):
            # "WHERE 1 = 1" lets SQLite tell the upsert clause from the SELECT's own syntax.
            cursor.execute(
                f"INSERT INTO {_LIKE_TABLE} (comment_id, user_id, subject_id, active, version, created_at) "
                f"SELECT x.c, x.u, x.s, x.a, x.v, x.t FROM {source} WHERE 1 = 1 "
                f"ON CONFLICT (comment_id, user_id, subject_id) DO NOTHING RETURNING comment_id, user_id",
                params,
            )
            inserted += cursor.fetchall()
    return inserted


def _locked_rows(pairs: list[tuple[int, int]], subject_id: int) -> list[tuple[int, int, int, bool, int]]:
    """``(id, comment_id, user_id, active, version)`` of the pairs' existing rows, locked."""
    lock = " FOR UPDATE OF l" if connection.features.has_select_for_update_of else ""
    within, within_params = _within("l", subject_id)
    rows = []
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources([("c", "bigint"), ("u", "bigint")], pairs):
            cursor.execute(
                f"SELECT l.id, l.comment_id, l.user_id, l.active, l.version FROM {_LIKE_TABLE} l "
                f"JOIN {source} ON l.comment_id = x.c AND l.user_id = x.u{within} ORDER BY l.id{lock}",
                [*params, *within_params],
            )
            rows.extend(cursor.fetchall())
    return [(i, c, u, bool(a), v) for i, c, u, a, v in rows]


def _update_rows(updates: list[tuple[int, bool, int, int, bool]], subject_id: int) -> None:
    """Set active and version of like rows, and the time of those that become a new like; one
    statement (SQLite: per chunk)."""
    columns = [("id", "bigint"), ("a", "boolean"), ("v", "bigint"), ("t", "ms"), ("n", "boolean")]
    within, within_params = _within(_LIKE_TABLE, subject_id)
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources(columns, updates):
            cursor.execute(
                f"UPDATE {_LIKE_TABLE} SET active = x.a, version = x.v, "
                f"created_at = CASE WHEN x.n THEN x.t ELSE {_LIKE_TABLE}.created_at END "
                f"FROM {source} WHERE {_LIKE_TABLE}.id = x.id{within}",
                [*params, *within_params],
            )


def _add_like_counts(changes: dict[int, int], subject_id: int) -> None:
    within, within_params = _within(_COMMENT_TABLE, subject_id)
    with connection.cursor() as cursor:
        for source, params in bulk_rows.sources([("id", "bigint"), ("d", "integer")], sorted(changes.items())):
            cursor.execute(
                f"UPDATE {_COMMENT_TABLE} SET like_count = {_COMMENT_TABLE}.like_count + x.d "
                f"FROM {source} WHERE {_COMMENT_TABLE}.id = x.id{within}",
                [*params, *within_params],
            )


# --- liking ----------------------------------------------------------------------------------

# How many answers of the like script ``like_set`` acts on before it writes to the database
# instead (exact: the comment's Redis state is then marked stale). Each answer but DONE is
# followed by the one step that removes its cause: the check (NEEDS_CHECK), the rows (COLD), the
# user's row (NEEDS_USER), the careful load (LOAD_CAREFULLY). With nothing else happening to the
# comment, a like takes at most three answers (COLD, NEEDS_CHECK, DONE); the other two rounds are
# for a state lost, or rows written by the flush, in between.
LIKE_ROUNDS = 5


def _likeable(comment_id: int, user: User) -> comment_queries.CommentRef:
    """The comment, checked visible to ``user``, not deleted, and in a subject open to
    ``user`` (``NotFound``, ``SubjectClosed`` otherwise)."""
    comment = comment_queries.comment_ref_for_viewer(comment_id=comment_id, user=user)
    if comment.status in GONE_STATUSES:
        raise NotFound("Unknown comment.")
    comment_services.check_subject_open(subject_state=comment.subject_state, site_id=comment.site_id, user=user)
    return comment


def like_set(*, comment_id: int, user: User, liked: bool) -> tuple[int, bool]:
    """Like or unlike a comment ``user`` may see; idempotent; refused when the user may not
    take part on the site (a ban) or its subject is closed to them (``check_subject_open``).
    Returns ``(like_count, liked)`` as they are now.

    Redis answers when it can, in one round trip for a published public comment whose state
    is loaded: the state's flag says whether everyone who can read the subject may like it,
    and the subject's mark that it is open (``keys.subject_open``, left by a like that read it
    so lately), so the database is asked only about the others. A comment this process has
    not met is read in one statement (where it lives, its subject's state, its count, the
    user's like row, and, if it has few, its likers in case Redis lacks its state), so a cold
    comment costs that statement and one round trip: the script makes a whole state from few
    likers, a partial one (``protocol.PARTIAL``) from a popular comment's count
    (``LIKES_PARTIAL_STATES`` off: the state is loaded whole first). A partial state
    that has not met the user asks for the user's like row first (one statement, one more
    round trip). Without Redis the database is checked and written at once."""
    r = state_sync.client()
    rows = None
    place = queries.known_place(comment_id=comment_id)
    if place is None and r is not None:
        rows = state_sync.read_rows(comment_id, likers_up_to=state_sync.FIRST_MEET_LIKERS, user_id=user.pk)
        place = queries.remember_place(comment_id=comment_id, place=(rows.subject_id, rows.site_id))
    subject_id, site_id = place or queries.place(comment_id=comment_id)
    comment_queries.check_acts_on_site(user=user, site=site_id)
    hooks.check_participation(site_id, user.pk)
    checked = None
    partial = settings.LIKES_PARTIAL_STATES
    creation = rows.creation(partial=partial) if rows is not None else None
    subject_open = rows is not None and rows.subject_open
    user_row = live.UserRow(rows.user_row) if rows is not None and rows.user_row is not None else None
    if r is not None:
        try:
            for _ in range(LIKE_ROUNDS):
                result = live.like(
                    r,
                    subject_id=subject_id,
                    comment_id=comment_id,
                    user_id=user.pk,
                    liked=liked,
                    checked=checked is not None,
                    subject_open=subject_open,
                    user_row=user_row,
                    create=creation,
                )
                match result.outcome:
                    case LikeOutcome.DONE:
                        return result.count, result.liked
                    case LikeOutcome.NEEDS_CHECK:
                        checked = _likeable(comment_id, user)
                        subject_open = checked.subject_state == SubjectState.OPEN
                    case LikeOutcome.NEEDS_USER:
                        _past_the_flush(user_row)
                        user_row = live.UserRow(state_sync.user_row(comment_id, subject_id, user.pk), result.since)
                    case LikeOutcome.COLD:
                        _past_the_flush(creation)
                        # A comment of more likers than are worth shipping gets a partial state.
                        rows = state_sync.read_rows(
                            comment_id, likers_up_to=state_sync.FIRST_MEET_LIKERS, user_id=user.pk
                        )
                        creation, subject_open = rows.creation(result.since, partial=partial), rows.subject_open
                        user_row = None if rows.user_row is None else live.UserRow(rows.user_row, result.since)
                        if creation is None and rows.flat_likers is None:
                            # Too many likers to ship, and no partial state: load it whole.
                            state_sync.load(r, comment_id=comment_id, subject_id=subject_id)
                    case LikeOutcome.LOAD_CAREFULLY:
                        state_sync.load(r, comment_id=comment_id, subject_id=subject_id)
                        creation = None
                    case unexpected:
                        assert_never(unexpected)
        except (*redislink.ERRORS, state_sync.LoadTimeout) as exc:
            redislink.mark_down(exc)
    return _like_in_database(checked or _likeable(comment_id, user), user, liked)


def _past_the_flush(sent: live.UserRow | live.Creation | None) -> None:
    """Before reading rows again because the like script refused those ``sent``, read after its
    last answer (the flush wrote to them in that answer's millisecond, or later): wait a
    millisecond. The script counts a write in the same millisecond as its answer as after it,
    so rows read again at once could be refused again, as long as Redis's clock stays in that
    millisecond. Rows read before asking Redis are refused for any write in the last minute,
    which a new answer's time leaves behind."""
    if sent is not None and sent.since is not None:
        time.sleep(0.001)


def _like_in_database(comment: comment_queries.CommentRef, user: User, liked: bool) -> tuple[int, bool]:
    like_actions_apply(
        [LikeAction(comment_id=comment.pk, user_id=user.pk, liked=liked, at_ms=live.now_ms())],
        subject_id=comment.subject_id,
        # Redis is configured but did not answer: its state of this comment falls behind.
        mark_stale=bool(settings.LIKES_REDIS_URL),
    )
    count = (
        Comment.objects.filter(pk=comment.pk, subject_id=comment.subject_id)
        .values_list("like_count", flat=True)
        .first()
        or 0
    )
    return count, liked


def like_state_mark_empty(*, comments: list[tuple[int, int, int]]) -> None:
    """New comments have no likes: load their (empty) state now, so they never need a
    rebuild. ``comments``: ``(comment_id, subject_id, protocol.OPEN or protocol.CHECK)``. Inside
    ``streams.together()`` it travels with the other hand-offs; if it fails, the first like of each
    comment reads its state from the database, as for any comment whose state is not loaded."""
    streams.hand_off(live.mark_empty_commands(comments), otherwise=_state_left_to_first_like)


def _state_left_to_first_like() -> None:
    pass


def like_subject_mark(*, subject_id: int, subject_state: str) -> None:
    """A subject was opened or closed: tell the like script (``live.mark_subject``). If Redis
    does not answer, a mark left by a like before the closing runs out within
    ``protocol.SUBJECT_OPEN_SECONDS``; the database refuses such likes meanwhile whenever asked."""
    r = state_sync.client()
    if r is None:
        return
    try:
        live.mark_subject(r, subject_id=subject_id, open=subject_state == SubjectState.OPEN)
    except redislink.ERRORS as exc:
        redislink.mark_down(exc)


def like_state_reflag(*, comment_id: int, subject_id: int, flag: int) -> None:
    """A comment's status changed: tell its like state whether everyone may now like it. If
    Redis does not answer, its state is marked stale and dropped when Redis is back."""
    r = state_sync.client()
    if r is not None:
        try:
            live.reflag(r, comment_id=comment_id, subject_id=subject_id, flag=flag)
            return
        except redislink.ERRORS as exc:
            redislink.mark_down(exc)
    if settings.LIKES_REDIS_URL:
        StaleLikeState.objects.update_or_create(
            comment_id=comment_id, defaults={"subject_id": subject_id, "created_at": timezone.now()}
        )


# --- the flush -------------------------------------------------------------------------------


@dataclass
class FlushReport:
    events: int = 0
    changed_comments: int = 0
    batches: int = 0
    subjects: int = 0
    stale_dropped: int = 0
    seconds: float = 0.0


def _action(entry_id: str, fields: list) -> LikeAction | None:
    parsed = live.parse_action(fields)
    if parsed is None:
        return None  # not an entry of ours: acknowledged and dropped
    return LikeAction(*parsed, streams.entry_version(entry_id))


def likes_flush(*, max_seconds: float | None = None, batch: int | None = None) -> FlushReport:
    """Drain the event streams into the database: batches of entries, each collapsed to the
    newest action per (comment, user), written in one transaction, then acknowledged. A
    subject's stream is read until a read finds less than a batch; what comes in meanwhile is
    the next run's (``streams.stream_drain`` says why).

    At least once: a flush that dies before acknowledging leaves its entries pending, and a
    later run takes them over after ``LIKES_RECLAIM_IDLE`` seconds; applying them again
    changes nothing. Several flushes may run at once (they read disjoint entries)."""
    started = time.monotonic()
    report = FlushReport()
    r = state_sync.client()
    if r is None:
        return report
    deadline = started + (max_seconds if max_seconds is not None else settings.LIKES_FLUSH_MAX_SECONDS)
    batch = batch or settings.LIKES_FLUSH_BATCH
    reclaim_ms = int(settings.LIKES_RECLAIM_IDLE * 1000)
    consumer = streams.consumer_name()
    report.stale_dropped = state_sync.drop_stale(r)
    for subject_id, score in live.dirty_subjects(r):
        if time.monotonic() > deadline:
            break
        report.subjects += 1
        stream = keys.events(subject_id)
        while time.monotonic() <= deadline:
            entries = streams.read_events(r, stream, consumer, batch, reclaim_ms)
            if not entries:
                break
            parsed = [_action(i, f) for i, f in entries]
            actions = [a for a in parsed if a is not None]
            changes = like_actions_apply(actions, subject_id=subject_id)
            live.acknowledge(
                r,
                subject_id,
                [(i, None if a is None else a.comment_id) for (i, _), a in zip(entries, parsed, strict=True)],
            )
            report.events += len(entries)
            report.changed_comments += len(changes)
            report.batches += 1
            if len(entries) < batch:
                break  # drained as of the read: see streams.stream_drain
        # Forget a drained subject after a quiet minute: a registration covers the actions a
        # process appends for ``live.REGISTER_EVERY`` seconds after it, and the minute covers
        # that many times over.
        if live.now_ms() - score > live.DIRTY_QUIET_MS and streams.stream_length(r, stream) == 0:
            live.forget_dirty(r, subject_id, score)
            streams.drop_idle_consumers(r, stream)
    report.seconds = time.monotonic() - started
    return report


# --- repair ----------------------------------------------------------------------------------


def like_counts_reconcile(*, subject_id: int | None = None) -> int:
    """Recompute ``like_count`` from the active like rows (of one subject, or all); returns
    how many comments had drifted. Set-based: one statement. The pages of the subjects whose
    counts changed go out of date (their hot order may have moved)."""
    comment = _COMMENT_TABLE
    count = (
        f"(SELECT COUNT(*) FROM {_LIKE_TABLE} l "
        f"WHERE l.comment_id = {comment}.id AND l.subject_id = {comment}.subject_id AND l.active)"
    )
    where, params = (f"{comment}.subject_id = %s AND ", [subject_id]) if subject_id is not None else ("", [])
    with transaction.atomic(), connection.cursor() as cursor:
        if subject_id is not None:
            list(Subject.objects.select_for_update().filter(pk=subject_id).values_list("pk", flat=True))
        cursor.execute(
            f"UPDATE {comment} SET like_count = {count} WHERE {where}{comment}.like_count <> {count} RETURNING subject_id",
            params,
        )
        changed = [subject for (subject,) in cursor.fetchall()]
        for subject in set(changed):
            comment_services.pages_change(subject)
        return len(changed)


def like_state_rebuild(*, subject_id: int | None = None) -> int | None:
    """Replace the Redis like state (of one subject, or all) with what the database holds:
    pending events are flushed first, counts reconciled, then every liked comment's state is
    built again (comments without likes are left to load on first use). Returns how many
    states were built; None without Redis."""
    r = state_sync.client()
    if r is None:
        return None
    likes_flush()
    like_counts_reconcile(subject_id=subject_id)
    comments = Comment.objects.filter(like_count__gt=0)
    if subject_id is not None:
        comments = comments.filter(subject_id=subject_id)
    built = 0
    for comment_id, comment_subject in comments.values_list("pk", "subject_id").iterator(chunk_size=2000):
        live.drop(r, [(comment_id, comment_subject)])
        state_sync.load(r, comment_id=comment_id, subject_id=comment_subject)
        built += 1
    return built
