"""Comments as the API shows them to one viewer: placeholders, the status a viewer is told,
contents (carried by list rows, else read in one query) and like state in one round trip."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from django.db import connection

from infra import replicas

from .. import hooks, rowsql
from ..avatars import avatar_path
from ..models import GONE_STATUSES, Comment, CommentContent, Status, User
from .visibility import Viewer, can_see


def present_user(user: User | rowsql.UserFace | None) -> dict | None:
    if user is None:
        return None
    face = {"id": user.pk, "name": user.public_name, "avatar": avatar_path(user.pk, user.avatar_url)}
    if user.is_guest:  # only then: a member's face is as it always was
        face["guest"] = True
    return face


def _is_placeholder(viewer: Viewer, comment: Comment | rowsql.CommentRow | rowsql.ReplyTarget) -> bool:
    """Content hidden from this viewer: deleted/rejected for non-moderators, or a chain ancestor
    the viewer may not read."""
    return not viewer.is_moderator and (comment.status in GONE_STATUSES or not can_see(viewer=viewer, comment=comment))


def _shown_status(viewer: Viewer, comment: Comment | rowsql.CommentRow, placeholder: bool) -> str:
    """What the viewer is told of the status, given ``_is_placeholder`` of the comment."""
    if viewer.is_moderator:
        return comment.status
    if placeholder:
        return comment.status if comment.status in GONE_STATUSES else Status.DELETED
    if comment.status == Status.SHADOW:
        return Status.PUBLISHED  # the author must not notice the shadow
    return comment.status


def _contents(
    comment_ids: list[int], subject_ids: set[int], liked_expression: tuple[str, list] | None
) -> dict[int, tuple[str, str, bool]]:
    """``{id: (body, html, liked)}`` in one query by primary key; ``liked`` is False unless the
    expression (``hooks.liked_sql``) is given. The comments' subjects name the shards they are
    on, should the tables be distributed (infra.citus)."""
    if not comment_ids:
        return {}
    table = connection.ops.quote_name(CommentContent._meta.db_table)
    liked, params = liked_expression or ("0 = 1", [])
    among, among_params = rowsql.any_of("cc.comment_id", comment_ids)
    of_subjects, subject_params = _of_subjects(subject_ids)
    sql = f"SELECT cc.comment_id, cc.body, cc.html, {liked} FROM {table} cc WHERE {among} AND {of_subjects}"
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, [*params, *among_params, *subject_params])
        return {row[0]: (row[1], row[2], bool(row[3])) for row in cursor.fetchall()}


def _of_subjects(subject_ids: Collection[int]) -> tuple[str, list]:
    """The contents' subjects: one (a page) as a plain equality, which Citus routes to its
    shard with the like probe; several (a user's history) as a list."""
    if len(subject_ids) == 1:
        return "cc.subject_id = %s", list(subject_ids)
    return rowsql.any_of("cc.subject_id", subject_ids)


def liked_ids(
    *, comment_ids: Collection[int], subject_ids: Collection[int], liked_expression: tuple[str, list] | None
) -> set[int]:
    """Which of ``comment_ids`` (of ``subject_ids``) the expression (``hooks.liked_sql``, over
    ``cc``) holds for: the viewer's likes, in one query by primary key; none without one."""
    if not comment_ids or liked_expression is None:
        return set()
    liked, params = liked_expression
    among, among_params = rowsql.any_of("cc.comment_id", comment_ids)
    of_subjects, subject_params = _of_subjects(subject_ids)
    table = connection.ops.quote_name(CommentContent._meta.db_table)
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT cc.comment_id FROM {table} cc WHERE {among} AND {of_subjects} AND {liked}",
            [*among_params, *subject_params, *params],
        )
        return {row[0] for row in cursor.fetchall()}


def present_new_comment(*, comment: Comment, viewer: Viewer) -> dict:
    """The API shape of a comment ``comment_create`` has just written: its content row is at
    hand and nobody likes it yet, so nothing is read."""
    return present_comments(rows=[comment], viewer=viewer, just_written=True)[comment.pk]


def present_comments(
    *, rows: Iterable[Comment | rowsql.CommentRow], viewer: Viewer, just_written: bool = False
) -> dict[int, dict]:
    """API-shaped dicts for ``rows``: what the page needs beyond the rows is read first
    (``_page_extras``: the contents list rows do not carry, in one query, and the like state
    from the live store in one round trip, or the viewer's likes alongside the contents), then
    each row is shaped (``_shape``), reading nothing. Models are taken as list rows
    (``CommentRow.of_model``): one row type is shaped."""
    unique = {c.pk: c for c in rows}
    page = [
        c if isinstance(c, rowsql.CommentRow) else rowsql.CommentRow.of_model(c, with_content=just_written)
        for c in unique.values()
    ]
    placeholders = {c.pk: _is_placeholder(viewer, c) for c in page}
    extras = _just_written(page) if just_written else _page_extras(page, viewer, placeholders)
    return {c.pk: _shape(c, viewer, placeholders[c.pk], extras) for c in page}


@dataclass(slots=True)
class _Extras:
    """What a page needs beyond its rows: ``like_state`` ``{id: (count, liked or None)}`` from
    the live store; ``unknown``, the ids whose ``liked`` it could not tell; ``contents``
    ``{id: (body, html, liked)}`` of the readable comments (``liked`` meaningful for the
    unknown ones only)."""

    like_state: dict[int, tuple[int, bool | None]]
    unknown: set[int]
    contents: dict[int, tuple[str, str, bool]]


def _just_written(page: list[rowsql.CommentRow]) -> _Extras:
    """A comment just written: its content at hand, nobody likes it yet."""
    return _Extras({c.pk: (0, False) for c in page}, set(), {c.pk: (c.body or "", c.html or "", False) for c in page})


def _page_extras(page: list[rowsql.CommentRow], viewer: Viewer, placeholders: dict[int, bool]) -> _Extras:
    """Live like state where the store has it; the rest (no store, or comments whose state is
    not loaded) from the rows, with "liked" riding along the content query."""
    like_state = hooks.page_like_state([(c.pk, c.subject_id) for c in page], viewer.user_id) or {}
    readable = [pk for pk, hidden in placeholders.items() if not hidden]
    unknown = {pk for pk in placeholders if like_state.get(pk, (0, None))[1] is None}
    subjects = {c.subject_id for c in page}
    liked_expression = None if not unknown else hooks.liked_sql(viewer.user_id, subjects)
    carried = {c.pk: (c.body, c.html or "") for c in page if c.body is not None}
    contents = _contents([pk for pk in readable if pk not in carried], subjects, liked_expression)
    if carried:
        shown = [pk for pk in readable if pk in carried]
        liked = liked_ids(
            comment_ids=[pk for pk in shown if pk in unknown], subject_ids=subjects, liked_expression=liked_expression
        )
        contents.update((pk, (*carried[pk], pk in liked)) for pk in shown)
    return _Extras(like_state, unknown, contents)


def _shape(c: rowsql.CommentRow, viewer: Viewer, placeholder: bool, extras: _Extras) -> dict:
    """One comment as the API shows it to ``viewer``."""
    content = extras.contents.get(c.pk)
    reply_to = None
    if c.reply_to_id is not None:
        target = c.reply_target
        reply_to = {
            "id": c.reply_to_id,
            "author": None if target is None or _is_placeholder(viewer, target) else present_user(target.author),
        }
    like_state = extras.like_state
    return {
        "id": c.pk,
        "subject_id": c.subject_id,
        "reply_to_id": c.reply_to_id,
        "root_id": c.root_id,
        "depth": c.depth,
        "floor": c.floor,
        "author": None if placeholder else present_user(c.author),
        "reply_to": reply_to,
        "body": "" if placeholder or content is None else content[0],
        "html": "" if placeholder or content is None else content[1],
        "status": _shown_status(viewer, c, placeholder),
        "visibility": c.visibility,
        "pinned": c.pinned,
        "featured": c.featured,
        "like_count": like_state[c.pk][0] if c.pk in like_state else c.like_count,
        "liked": content is not None and content[2] if c.pk in extras.unknown else like_state[c.pk][1],
        "reply_count": c.reply_count,
        "created_at": c.created_at,
        "edited_at": c.edited_at,
    }


def in_order(rows: list[rowsql.CommentRow], shown: dict[int, dict]) -> list[dict]:
    return [shown[c.pk] for c in rows]
