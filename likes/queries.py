"""Every read of the likes app: the like state of a page of comments and the likers list,
from Redis when it holds them, else from the database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeGuard

from django.db import connection

from comments import rowsql
from comments.exceptions import InvalidInput
from comments.queries import comment_place, comment_ref_for_viewer, decode_cursor, encode_cursor, present_user
from comments.rowsql import UNIX_EPOCH, aware
from infra import redislink

from . import live, state_sync
from .models import Like

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

    from comments.models import User

_LIKE = connection.ops.quote_name(Like._meta.db_table)

# ``(subject_id, site_id)`` of comments: facts that never change, so a process keeps those it
# met and a like or a likers page on a known comment reads nothing to find its state.
_places: dict[int, tuple[int, int]] = {}
_PLACES_KEPT = 100_000


def known_place(*, comment_id: int) -> tuple[int, int] | None:
    return _places.get(comment_id)


def remember_place(*, comment_id: int, place: tuple[int, int]) -> tuple[int, int]:
    if len(_places) >= _PLACES_KEPT:
        _places.clear()
    _places[comment_id] = place
    return place


def place(*, comment_id: int) -> tuple[int, int]:
    """``(subject_id, site_id)`` of a comment whoever may see it; ``NotFound`` for an unknown id."""
    return _places.get(comment_id) or remember_place(comment_id=comment_id, place=comment_place(comment_id=comment_id))


def liked_sql(user_id: int, subject_id: int | None) -> tuple[str, list]:
    """Over a ``comment_content`` row aliased ``cc``: does ``user_id`` like that comment? One
    probe of the unique (comment, user) index. ``active`` is read from the row, not put in the
    condition: with it there, PostgreSQL answered from the partial likers index instead, whose
    order puts the user last, reading every liker of a popular comment. The subject completes
    the unique key; given as a value (``subject_id``, the rows' one subject), it keeps the
    probe on that subject's shard on Citus, which an equality with ``cc.subject_id`` does not
    (Citus sent the statement to every shard)."""
    subject, params = ("%s", [subject_id]) if subject_id is not None else ("cc.subject_id", [])
    return (
        f"COALESCE((SELECT lk.active FROM {_LIKE} lk WHERE lk.comment_id = cc.comment_id AND lk.user_id = %s "
        f"AND lk.subject_id = {subject}), 0 = 1)",
        [user_id, *params],
    )


def page_like_state(comments: list[tuple[int, int]], user_id: int | None) -> dict[int, tuple[int, bool | None]] | None:
    """Live ``{comment_id: (like_count, liked)}`` for a page, in one Redis round trip. Comments
    whose state is not loaded are left out (the page reads them from the database, which is
    exact for them: their actions were all flushed before the state went), and ``liked`` is
    None where a partial state has not met the viewer (its row is exact for the same reason);
    None without Redis."""
    r = state_sync.client()
    if r is None:
        return None
    try:
        return live.page_state(r, comments, user_id)
    except redislink.ERRORS as exc:
        redislink.mark_down(exc)
        return None


@dataclass
class LikersPage:
    items: list[dict]
    next_cursor: str | None


def likers(*, comment_id: int, user: User | AnonymousUser, limit: int, cursor: str | None) -> LikersPage:
    """Who likes a comment ``user`` may see, oldest like first: ``{"user", "liked_at"}`` items;
    ``NotFound`` for a comment ``user`` may not see. The cursor holds the last item's (like
    time in µs, user id).

    From Redis when it holds the state: its flag says whether the comment is visible to all,
    so for a published public comment the database is asked only for the likers' faces."""
    subject_id, _ = place(comment_id=comment_id)
    scope = f"likers:{comment_id}"
    try:
        position = decode_cursor(cursor=cursor, scope=scope)
        after: tuple[int, int] | None = None
        if position is not None:
            moment, liker = position.get("t"), position.get("u")
            if not (_whole(moment) and _whole(liker)):
                raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
            after = (moment, liker)
    except InvalidInput:
        comment_ref_for_viewer(comment_id=comment_id, user=user)  # an unseen comment is not found, cursor or not
        raise
    rows = _likers_live(comment_id, subject_id, user, after, limit)
    if rows is None:
        comment_ref_for_viewer(comment_id=comment_id, user=user)
        rows = _likers_stored(comment_id, after, limit)
    page = rows[:limit]
    faces = rowsql.user_faces(u for u, _ in page)
    items = [
        {"user": present_user(faces[user_id]), "liked_at": _from_micros(micros)}
        for user_id, micros in page
        if user_id in faces
    ]
    next_cursor = None
    if len(rows) > limit:
        last_user, last_micros = page[-1]
        next_cursor = encode_cursor(scope=scope, position={"t": last_micros, "u": last_user})
    return LikersPage(items=items, next_cursor=next_cursor)


def _whole(value: object) -> TypeGuard[int]:
    """An int read from a cursor: not a bool, which Python counts as an int."""
    return isinstance(value, int) and not isinstance(value, bool)


def _from_micros(micros: int) -> datetime:
    return UNIX_EPOCH + timedelta(microseconds=micros)


def _likers_live(
    comment_id: int, subject_id: int, user: User | AnonymousUser, after: tuple[int, int] | None, limit: int
) -> list[tuple[int, int]] | None:
    """``(user_id, µs)`` from Redis (its times are whole milliseconds), loading the state
    first if it is not there, and checking that ``user`` may see the comment unless the state
    says everyone may; None when Redis cannot answer."""
    r = state_sync.client()
    if r is None:
        return None
    redis_after = None if after is None else (after[0] // 1000, after[1])
    try:
        for _ in range(3):
            answer = live.likers_page(r, subject_id=subject_id, comment_id=comment_id, after=redis_after, limit=limit)
            if answer is not None:
                visible_to_all, rows = answer
                if not visible_to_all:
                    comment_ref_for_viewer(comment_id=comment_id, user=user)
                return [(user_id, at_ms * 1000) for user_id, at_ms in rows]
            state_sync.load(r, comment_id=comment_id, subject_id=subject_id)
    except (*redislink.ERRORS, state_sync.LoadTimeout) as exc:
        redislink.mark_down(exc)
    return None


def _likers_stored(comment_id: int, after: tuple[int, int] | None, limit: int) -> list[tuple[int, int]]:
    """``(user_id, µs)`` from the like rows, by the ``like_likers_by_time`` index."""
    params: list[Any]
    where, params = "comment_id = %s AND active", [comment_id]
    if after is not None:
        where += " AND (created_at > %s OR (created_at = %s AND user_id > %s))"
        moment = connection.ops.adapt_datetimefield_value(_from_micros(after[0]))
        params += [moment, moment, after[1]]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT user_id, created_at FROM {_LIKE} WHERE {where} ORDER BY created_at, user_id LIMIT %s",
            [*params, limit + 1],
        )
        return [(user_id, _micros(aware(created_at))) for user_id, created_at in cursor.fetchall()]


def _micros(moment: datetime) -> int:
    return (moment - UNIX_EPOCH) // timedelta(microseconds=1)
