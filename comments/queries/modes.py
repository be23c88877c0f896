"""The lists: two-level (top-level comments with reply previews, and a thread's replies),
flat and stacked, a comment's chain and subtree, a user's comments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection

from .. import paths, rowsql
from ..exceptions import InvalidInput
from ..models import Comment, Mode, Status, Subject, User, Visibility
from ..rowsql import Sql
from .cursors import Page, decode_cursor, excluding, head_then_tail, keyset, keyset_after, tail_after_head
from .present import in_order, present_comments
from .visibility import Viewer, authenticated, visible_sql

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser


def _reply_previews(
    subject_id: int, root_ids: list[int], viewer: Viewer, per_root: int
) -> dict[int, list[rowsql.CommentRow]]:
    """Up to ``per_root`` hottest visible replies of each root (most likes, ties oldest), in one
    query. PostgreSQL: ``ORDER BY like_count DESC, id LIMIT n`` per root in a LATERAL join over
    the ``comment_thread_by_likes`` index, so a thread of 10,000 replies costs ``n`` index
    entries. Elsewhere (SQLite) a window function ranks the replies of the page's roots.
    The roots' subject is named too, for a Citus router query (infra.citus)."""
    if not root_ids or per_root <= 0:
        return {}
    visible = visible_sql(viewer=viewer, subject_id=subject_id, x="p")
    table = connection.ops.quote_name(Comment._meta.db_table)
    if connection.vendor == "postgresql":
        chosen = (
            f"c.subject_id = %s AND c.id IN (SELECT x.id FROM unnest(%s::bigint[]) AS r(root_id) CROSS JOIN LATERAL ("
            f"SELECT p.id FROM {table} p WHERE p.root_id = r.root_id AND p.subject_id = %s AND {visible.text} "
            f"ORDER BY p.like_count DESC, p.id ASC LIMIT %s) AS x)"
        )
        where = Sql(chosen, (subject_id, list(root_ids), subject_id, *visible.params, per_root))
    else:
        among, among_params = rowsql.any_of("p.root_id", root_ids)
        chosen = (
            f"c.subject_id = %s AND c.id IN (SELECT ranked.id FROM (SELECT p.id, ROW_NUMBER() OVER (PARTITION BY p.root_id "
            f"ORDER BY p.like_count DESC, p.id ASC) AS rank FROM {table} p "
            f"WHERE {among} AND p.subject_id = %s AND {visible.text}) AS ranked WHERE ranked.rank <= %s)"
        )
        where = Sql(chosen, (subject_id, *among_params, subject_id, *visible.params, per_root))
    previews: dict[int, list[rowsql.CommentRow]] = {}
    for reply in rowsql.fetch(where, order=(("root_id", "asc"), ("like_count", "desc"), ("id", "asc"))):
        previews.setdefault(reply.root_id, []).append(reply)  # type: ignore[arg-type]  # a reply has a root
    return previews


def list_two_level(
    *, subject: Subject, viewer: Viewer, sort: str, limit: int, cursor: str | None, replies: int
) -> Page:
    """List 1 of two-level mode: top-level comments, pinned first, then by ``sort``, each with
    its hottest replies."""
    scope = f"two_level:{subject.pk}:{sort}"
    # "depth = 0" is literal so the planner can use the partial indexes of top-level rows.
    roots = rowsql.in_subject(subject.pk, "c.depth = 0") & visible_sql(viewer=viewer, subject_id=subject.pk)
    pinned_limit = settings.COMMENTS_PINNED_LIMIT
    tail_order = "asc" if sort == "old" else "desc"

    def head_rows(ids: list[int]) -> list[rowsql.CommentRow]:
        return rowsql.fetch_ids(ids, roots)

    def tail_rows(exclude: list[int], after: int | None, n: int) -> list[rowsql.CommentRow]:
        return rowsql.fetch(
            excluding(where=roots, exclude=exclude, after=after, order=tail_order), order=(("id", tail_order),), limit=n
        )

    def first_page_rows(n: int) -> tuple[list[rowsql.CommentRow], list[rowsql.CommentRow], bool]:
        if sort == "hot":
            hot_limit = settings.COMMENTS_HOT_LIMIT
            rows = rowsql.fetch(
                roots, order=(("pinned", "desc"), ("hot_score", "desc"), ("id", "desc")), limit=pinned_limit + hot_limit
            )
            head = [c for c in rows if c.pinned][:pinned_limit] + [c for c in rows if not c.pinned][:hot_limit]
            return head, *tail_after_head(
                head=head, rows_read=rows, head_query_limit=pinned_limit + hot_limit, n=n, tail_rows=tail_rows
            )
        rows = rowsql.fetch(roots, order=(("pinned", "desc"), ("id", tail_order)), limit=n + pinned_limit + 1)
        head = [c for c in rows if c.pinned][:pinned_limit]
        head_ids = {c.pk for c in head}
        tail = [c for c in rows if c.pk not in head_ids]
        return head, tail, len(rows) < n + pinned_limit + 1

    page, next_cursor = head_then_tail(
        scope=scope,
        cursor=cursor,
        limit=limit,
        first_page_rows=first_page_rows,
        head_rows=head_rows,
        tail_rows=tail_rows,
    )
    previews = _reply_previews(subject.pk, [c.pk for c in page], viewer, replies)
    every = page + [r for rs in previews.values() for r in rs]
    shown = present_comments(rows=every, viewer=viewer)
    items = []
    for c in page:
        item = shown[c.pk]
        item["replies"] = [shown[r.pk] for r in previews.get(c.pk, [])]
        items.append(item)
    return Page(items=items, next_cursor=next_cursor)


def list_replies(*, root: Comment, viewer: Viewer, sort: str, limit: int, cursor: str | None) -> Page:
    """List 2 of two-level mode: every visible reply in the thread of ``root``, flattened.
    ``hot`` starts with the ``COMMENTS_HOT_LIMIT`` most liked replies, then the rest oldest
    first."""
    if root.depth != 0:
        raise InvalidInput("Replies are listed for top-level comments only.")
    scope = f"replies:{root.pk}:{sort}"
    replies = rowsql.in_subject(root.subject_id, "c.root_id = %s", (root.pk,)) & visible_sql(
        viewer=viewer, subject_id=root.subject_id
    )
    if sort in ("old", "new"):
        after = keyset_after(position=decode_cursor(cursor=cursor, scope=scope))
        rows, next_cursor = keyset(
            where=replies, order="asc" if sort == "old" else "desc", key="id", after=after, limit=limit, scope=scope
        )
        return Page(items=in_order(rows, present_comments(rows=rows, viewer=viewer)), next_cursor=next_cursor)

    def tail_rows(exclude: list[int], after: int | None, n: int) -> list[rowsql.CommentRow]:
        return rowsql.fetch(
            excluding(where=replies, exclude=exclude, after=after, order="asc"), order=(("id", "asc"),), limit=n
        )

    def first_page_rows(n: int) -> tuple[list[rowsql.CommentRow], list[rowsql.CommentRow], bool]:
        hot_limit = settings.COMMENTS_HOT_LIMIT
        head = rowsql.fetch(replies, order=(("like_count", "desc"), ("id", "asc")), limit=hot_limit)
        return head, *tail_after_head(head=head, rows_read=head, head_query_limit=hot_limit, n=n, tail_rows=tail_rows)

    page, next_cursor = head_then_tail(
        scope=scope,
        cursor=cursor,
        limit=limit,
        first_page_rows=first_page_rows,
        head_rows=lambda ids: rowsql.fetch_ids(ids, replies),
        tail_rows=tail_rows,
    )
    return Page(items=in_order(page, present_comments(rows=page, viewer=viewer)), next_cursor=next_cursor)


def list_flat(
    *, subject: Subject, viewer: Viewer, sort: str, limit: int, cursor: str | None, mode: str = Mode.FLAT
) -> Page:
    """Every visible comment of the subject, every depth, by time; in stacked mode each item
    also carries its chain of ancestors (one more query for all chains of the page)."""
    scope = f"{mode}:{subject.pk}:{sort}"
    after = keyset_after(position=decode_cursor(cursor=cursor, scope=scope))
    rows, next_cursor = keyset(
        where=rowsql.in_subject(subject.pk) & visible_sql(viewer=viewer, subject_id=subject.pk),
        order="asc" if sort == "old" else "desc",
        key="id",
        after=after,
        limit=limit,
        scope=scope,
    )
    if mode != Mode.STACKED:
        return Page(items=in_order(rows, present_comments(rows=rows, viewer=viewer)), next_cursor=next_cursor)
    ancestors = rowsql.fetch_ids({a for c in rows for a in c.ancestor_ids()}, rowsql.in_subject(subject.pk))
    shown = present_comments(rows=[*rows, *ancestors], viewer=viewer)
    items = []
    for c in rows:
        item = dict(shown[c.pk])  # a row of the page may also sit in another row's chain
        item["chain"] = [shown[a] for a in c.ancestor_ids() if a in shown]
        items.append(item)
    return Page(items=items, next_cursor=next_cursor)


def comment_chain(*, comment: Comment, viewer: Viewer) -> list[dict]:
    """The top-level comment down to ``comment`` itself: ids from the path, rows in one query."""
    ids = paths.split_path(comment.path)
    if comment.reply_to_id is not None and comment.reply_to_id not in ids:
        # Stored as a sibling at the depth cap: the chain still ends with what it answers.
        ids = ids[:-1] + [comment.reply_to_id, comment.pk]
    rows: dict[int, Comment | rowsql.CommentRow] = {
        c.pk: c for c in rowsql.fetch_ids(ids[:-1], rowsql.in_subject(comment.subject_id))
    }
    rows[comment.pk] = comment
    shown = present_comments(rows=rows.values(), viewer=viewer)
    return [shown[i] for i in ids if i in shown]


def comment_tree(*, comment: Comment, viewer: Viewer, limit: int, cursor: str | None) -> Page:
    """``comment`` and its subtree depth-first, siblings oldest first: one path range scan."""
    scope = f"tree:{comment.pk}"
    after = keyset_after(position=decode_cursor(cursor=cursor, scope=scope), kind=str)
    low, high = paths.subtree_bounds(comment.path)
    visible = visible_sql(viewer=viewer, subject_id=comment.subject_id)
    rows, next_cursor = keyset(
        where=rowsql.in_subject(
            comment.subject_id,
            f"c.path >= %s AND c.path < %s AND ({visible.text} OR c.id = %s)",
            (low, high, *visible.params, comment.pk),
        ),
        order="asc",
        key="path",
        after=after,
        limit=limit,
        scope=scope,
    )
    return Page(items=in_order(rows, present_comments(rows=rows, viewer=viewer)), next_cursor=next_cursor)


def user_comments(*, author: User, user: User | AnonymousUser, limit: int, cursor: str | None) -> Page:
    """A user's comments across subjects, newest first: everything for themself and staff,
    published (and, for mutual followers, friends-only) for others."""
    viewer = Viewer(user=authenticated(user), is_moderator=bool(authenticated(user) and user.is_staff))
    own = viewer.user is not None and viewer.user.pk == author.pk
    where = Sql("c.author_id = %s", (author.pk,))
    if own:
        viewer.is_moderator = False
    elif not viewer.is_moderator:
        where = where & Sql(f"c.status = '{Status.PUBLISHED}'")
        if viewer.user is None:
            where = where & Sql(f"c.visibility = '{Visibility.PUBLIC}'")
        else:
            friends, friend_params = rowsql.friends_sql(viewer.user.pk)
            where = where & Sql(
                f"(c.visibility = '{Visibility.PUBLIC}' OR "
                f"(c.visibility = '{Visibility.FRIENDS}' AND c.author_id IN ({friends})))",
                tuple(friend_params),
            )
    scope = f"user:{author.pk}"
    after = keyset_after(position=decode_cursor(cursor=cursor, scope=scope))
    rows, next_cursor = keyset(where=where, order="desc", key="id", after=after, limit=limit, scope=scope)
    return Page(items=in_order(rows, present_comments(rows=rows, viewer=viewer)), next_cursor=next_cursor)


def list_comments(
    *,
    subject: Subject,
    viewer: Viewer,
    mode: str | None,
    sort: str | None,
    limit: int,
    cursor: str | None,
    replies: int,
) -> Page:
    """The subject's comments in the requested display mode (the subject's own by default)."""
    mode = mode or subject.mode
    if mode == Mode.TWO_LEVEL:
        sort = sort or "hot"
        return list_two_level(subject=subject, viewer=viewer, sort=sort, limit=limit, cursor=cursor, replies=replies)
    sort = sort or "old"
    if sort == "hot":
        raise InvalidInput(
            "sort=hot is only available in two_level mode.", fields={"sort": ["hot is not allowed in this mode."]}
        )
    return list_flat(subject=subject, viewer=viewer, sort=sort, limit=limit, cursor=cursor, mode=mode)
