"""Every read of the comment core, each with a bounded number of queries (asserted in tests).

Lists are keyset-paginated with signed, scoped cursors, so page 500 costs what page 1 costs
and a cursor cannot be replayed against another subject, endpoint, sort or mode. Results are
plain dicts shaped like the API's comment object, projected for one viewer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from django.conf import settings
from django.core import signing
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Value, Window
from django.db.models.expressions import RawSQL
from django.db.models.functions import Concat, RowNumber

from . import hooks, paths
from .exceptions import InvalidInput, NotFound
from .models import (
    GONE_STATUSES,
    Comment,
    CommentContent,
    Follow,
    Mode,
    Site,
    Status,
    Subject,
    User,
    Visibility,
)

# --- viewer and visibility -----------------------------------------------------------------


@dataclass
class Viewer:
    """Who is looking, relative to one site."""

    user: User | None
    is_moderator: bool = False
    _friends: set[int] | None = field(default=None, repr=False)

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None

    def is_friend(self, user_id: int | None) -> bool:
        if self.user is None or user_id is None:
            return False
        if self._friends is None:
            self._friends = set(friend_ids_query(self.user.pk).values_list("followee_id", flat=True))
        return user_id in self._friends


def _authenticated(user) -> User | None:
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def is_site_moderator(user, site: Site) -> bool:
    user = _authenticated(user)
    if user is None:
        return False
    if user.is_staff:
        return True
    return site.moderators.filter(pk=user.pk).exists()


def viewer_for(user, site: Site) -> Viewer:
    user = _authenticated(user)
    return Viewer(user=user, is_moderator=is_site_moderator(user, site))


def _moderator_annotation(user, site_ref: str):
    """An ``Exists`` telling whether ``user`` moderates the site at ``site_ref``, so the check
    rides along with the query that loads the subject."""
    user = _authenticated(user)
    if user is None:
        return Value(False)
    if user.is_staff:
        return Value(True)
    through = Site.moderators.through
    return Exists(through.objects.filter(site_id=OuterRef(site_ref), user_id=user.pk))


def friend_ids_query(user_id: int) -> QuerySet:
    """Users who follow ``user_id`` and whom ``user_id`` follows back (as ``followee_id``)."""
    followers = Follow.objects.filter(followee_id=user_id).values("follower_id")
    return Follow.objects.filter(follower_id=user_id, followee_id__in=followers).values("followee_id")


def _seen_only_by_me_q(me: int) -> Q:
    """Rows visible to user ``me`` beyond the public ones: their own (any live status) and
    friends-only comments of mutual followers."""
    return Q(author_id=me, status__in=[Status.PUBLISHED, Status.PENDING, Status.SHADOW]) | Q(
        status=Status.PUBLISHED, visibility=Visibility.FRIENDS, author_id__in=friend_ids_query(me)
    )


def _descendants_seen_only_by(me: int, outer: str = "") -> QuerySet:
    """Descendants (of the row ``OuterRef(outer + "path")``) that only ``me`` and their friends
    see, which ``descendant_count`` (public only) does not count."""
    return Comment.objects.filter(
        _seen_only_by_me_q(me),
        subject_id=OuterRef(outer + "subject_id"),
        path__gt=OuterRef(outer + "path"),
        path__lt=Concat(OuterRef(outer + "path"), Value(paths.SUBTREE_END)),
    )


def visible_q(viewer: Viewer) -> Q:
    """Rows a viewer may see, placeholders included (content is masked when presented).

    A deleted or rejected comment stays as a placeholder while its subtree holds anything this
    viewer sees: public comments (counted in ``descendant_count``) or, for a signed-in viewer,
    their own and their friends' comments (an ``Exists`` over the path range, evaluated only
    for gone rows without public descendants)."""
    if viewer.is_moderator:
        return Q()
    visible = Q(status=Status.PUBLISHED, visibility=Visibility.PUBLIC) | Q(
        status__in=GONE_STATUSES, descendant_count__gt=0
    )
    if viewer.user is not None:
        me = viewer.user.pk
        visible |= _seen_only_by_me_q(me)
        visible |= Q(status__in=GONE_STATUSES, descendant_count=0) & Q(Exists(_descendants_seen_only_by(me)))
    return visible


def can_see(viewer: Viewer, comment: Comment) -> bool:
    """Python twin of ``visible_q`` for one loaded row."""
    if viewer.is_moderator:
        return True
    if comment.status in GONE_STATUSES:
        if comment.descendant_count > 0:
            return True
        if viewer.user is None:
            return False
        return (
            Comment.objects.filter(pk=comment.pk)
            .filter(Exists(_descendants_seen_only_by(viewer.user.pk)))
            .exists()
        )
    own = viewer.user is not None and comment.author_id == viewer.user.pk
    if comment.status in (Status.PENDING, Status.SHADOW):
        return own
    if comment.visibility == Visibility.FRIENDS:
        return own or viewer.is_friend(comment.author_id)
    return True


# --- loading subjects and single comments ----------------------------------------------------


def subject_for_viewer(subject_id: int, user) -> tuple[Subject, Viewer]:
    """The subject with its site, and the viewer's role there, in one query."""
    subject = (
        Subject.objects.select_related("site")
        .annotate(viewer_is_moderator=_moderator_annotation(user, "site_id"))
        .filter(pk=subject_id)
        .first()
    )
    if subject is None:
        raise NotFound("Unknown subject.")
    return subject, Viewer(user=_authenticated(user), is_moderator=subject.viewer_is_moderator)


def subject_lookup(site_key: str, key: str) -> Subject:
    subject = Subject.objects.select_related("site").filter(site__key=site_key, key=key).first()
    if subject is None:
        raise NotFound("Unknown subject.")
    return subject


def site_by_key(site_key: str) -> Site:
    site = Site.objects.filter(key=site_key).first()
    if site is None:
        raise NotFound("Unknown site.")
    return site


def subject_counts(site_key: str, keys: list[str]) -> dict[str, int]:
    """Public comment counts for many subject keys of one site, unknown keys 0, one query."""
    found = dict(
        Subject.objects.filter(site__key=site_key, key__in=keys).values_list("key", "comment_count")
    )
    return {key: found.get(key, 0) for key in keys}


# What a comment row needs of its users: never the password hash or e-mail.
_USER_FIELDS = ("id", "username", "display_name", "avatar_url")
_ROW_ONLY = (*(f.name for f in Comment._meta.concrete_fields), *(f"author__{f}" for f in _USER_FIELDS))
# The replied-to comment is needed only for its author's public face and its visibility:
# plain columns of the same join, so no second and third model instance per row.
_REPLY_TARGET = {
    "rt_status": F("reply_to__status"),
    "rt_visibility": F("reply_to__visibility"),
    "rt_descendant_count": F("reply_to__descendant_count"),
    "rt_author_id": F("reply_to__author_id"),
    "rt_author_username": F("reply_to__author__username"),
    "rt_author_display_name": F("reply_to__author__display_name"),
    "rt_author_avatar_url": F("reply_to__author__avatar_url"),
}


@dataclass
class _UserFace:
    """What public output shows of a user, without loading the user row."""

    pk: int
    username: str
    display_name: str
    avatar_url: str

    @property
    def public_name(self) -> str:
        return self.display_name or self.username


@dataclass
class _ReplyTarget:
    """The fields of a replied-to comment that ``can_see`` and ``present_user`` read."""

    pk: int
    status: str
    visibility: str
    descendant_count: int
    author_id: int | None
    author: _UserFace | None


def _reply_target(c: Comment) -> _ReplyTarget | Comment | None:
    if c.reply_to_id is None:
        return None
    if not hasattr(c, "rt_status"):
        return c.reply_to  # a row loaded another way (e.g. just created)
    author = None
    if c.rt_author_id is not None:
        author = _UserFace(
            pk=c.rt_author_id, username=c.rt_author_username,
            display_name=c.rt_author_display_name, avatar_url=c.rt_author_avatar_url,
        )
    return _ReplyTarget(
        pk=c.reply_to_id, status=c.rt_status, visibility=c.rt_visibility,
        descendant_count=c.rt_descendant_count, author_id=c.rt_author_id, author=author,
    )


def comment_for_viewer(comment_id: int, user) -> tuple[Comment, Viewer]:
    """One comment with its subject and site, and the viewer's role, in one query; ``NotFound``
    when the viewer may not see it (placeholders count as visible)."""
    comment = (
        _rows(Comment.objects.select_related("subject__site"), extra_only=(
            *(f"subject__{f.name}" for f in Subject._meta.concrete_fields),
            *(f"subject__site__{f.name}" for f in Site._meta.concrete_fields),
        ))
        .annotate(viewer_is_moderator=_moderator_annotation(user, "subject__site_id"))
        .filter(pk=comment_id)
        .first()
    )
    if comment is None:
        raise NotFound("Unknown comment.")
    viewer = Viewer(user=_authenticated(user), is_moderator=comment.viewer_is_moderator)
    if not can_see(viewer, comment):
        raise NotFound("Unknown comment.")
    return comment, viewer


# --- presenting ----------------------------------------------------------------------------


def present_user(user: "User | _UserFace | None") -> dict | None:
    if user is None:
        return None
    return {"id": user.pk, "name": user.public_name, "avatar": user.avatar_url or None}


def _is_placeholder(viewer: Viewer, comment: Comment) -> bool:
    """Content hidden from this viewer: deleted/rejected for non-moderators, or a chain ancestor
    the viewer may not read."""
    return not viewer.is_moderator and (comment.status in GONE_STATUSES or not can_see(viewer, comment))


def _shown_status(viewer: Viewer, comment: Comment) -> str:
    if viewer.is_moderator:
        return comment.status
    if comment.status in GONE_STATUSES:
        return comment.status
    if not can_see(viewer, comment):
        return Status.DELETED
    if comment.status == Status.SHADOW:
        return Status.PUBLISHED  # the author must not notice the shadow
    return comment.status


def _contents(comment_ids: list[int], liked_expression: tuple[str, list] | None) -> dict[int, tuple[str, str, bool]]:
    """``{id: (body, html, liked)}`` in one query by primary key; ``liked`` is False unless the
    expression (``hooks.liked_sql``) is given."""
    if not comment_ids:
        return {}
    table = connection.ops.quote_name(CommentContent._meta.db_table)
    liked, params = liked_expression or ("0 = 1", [])
    marks = ", ".join(["%s"] * len(comment_ids))
    sql = f"SELECT cc.comment_id, cc.body, cc.html, {liked} FROM {table} cc WHERE cc.comment_id IN ({marks})"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *comment_ids])
        return {row[0]: (row[1], row[2], bool(row[3])) for row in cursor.fetchall()}


def present_comments(rows: Iterable[Comment], viewer: Viewer) -> dict[int, dict]:
    """API-shaped dicts for ``rows``: one query for contents, and the like state from the live
    store in one round trip (or, without one, the viewer's likes in the same content query)."""
    rows = list({c.pk: c for c in rows}.values())
    like_state = hooks.page_like_state([(c.pk, c.subject_id) for c in rows], viewer.user_id)
    readable = [c.pk for c in rows if not _is_placeholder(viewer, c)]
    contents = _contents(readable, None if like_state is not None else hooks.liked_sql(viewer.user_id))
    out = {}
    for c in rows:
        placeholder = _is_placeholder(viewer, c)
        content = contents.get(c.pk)
        reply_to = None
        target = _reply_target(c)
        if c.reply_to_id is not None:
            reply_to = {
                "id": c.reply_to_id,
                "author": None if target is None or _is_placeholder(viewer, target) else present_user(target.author),
            }
        out[c.pk] = {
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
            "status": _shown_status(viewer, c),
            "visibility": c.visibility,
            "pinned": c.pinned,
            "featured": c.featured,
            "like_count": like_state[c.pk][0] if like_state is not None else c.like_count,
            "liked": like_state[c.pk][1] if like_state is not None else content is not None and content[2],
            "reply_count": c.reply_count,
            "created_at": c.created_at,
            "edited_at": c.edited_at,
        }
    return out


# --- cursors -------------------------------------------------------------------------------

_CURSOR_SALT = "comments.cursor"


def encode_cursor(scope: str, position: dict) -> str:
    return signing.dumps({"s": scope, "p": position}, salt=_CURSOR_SALT, compress=True)


def decode_cursor(cursor: str | None, scope: str) -> dict | None:
    """The position stored in ``cursor``; ``InvalidInput`` when it is malformed, tampered with
    or was made for another list."""
    if cursor is None:
        return None
    try:
        data = signing.loads(cursor, salt=_CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError, UnicodeError):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]}) from None
    if not isinstance(data, dict) or data.get("s") != scope or not isinstance(data.get("p"), dict):
        raise InvalidInput("This cursor belongs to another list.", fields={"cursor": ["Cursor does not match this list."]})
    return data["p"]


@dataclass
class Page:
    items: list[dict]
    next_cursor: str | None


def _rows(qs: QuerySet, extra_only: tuple = ()) -> QuerySet:
    """Comment rows with what presenting them needs, in the same query."""
    return qs.select_related("author").only(*_ROW_ONLY, *extra_only).annotate(**_REPLY_TARGET)


def _int_list(value, name="cursor") -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise InvalidInput("Malformed cursor.", fields={name: ["Malformed cursor."]})
    return value


def _head_then_tail(
    *,
    scope: str,
    cursor: str | None,
    limit: int,
    first_page_rows,
    head_rows,
    tail_rows,
) -> tuple[list[Comment], str | None]:
    """Pagination of a list that starts with a small fixed *head* (pinned and/or hottest items,
    chosen when page 1 is read and carried in the cursor) and continues with a *tail* in id
    order that excludes the head. Because the head is frozen in the cursor, items whose score
    changes between pages are neither repeated nor skipped.

    ``first_page_rows(limit)`` -> (head rows, tail rows read on page 1, whether those are the
    whole tail)
    ``head_rows(ids)`` -> visible rows among ids; ``tail_rows(exclude_ids, after_id, n)``.
    """
    position = decode_cursor(cursor, scope)
    if position is None:
        head, tail, tail_done = first_page_rows(limit)
        head_ids = [c.pk for c in head]
        page = head[:limit]
        offset = len(page)
        if offset < len(head):
            # "e": the list has no tail, so the last head page ends it.
            return page, encode_cursor(scope, {"h": head_ids, "o": offset, "k": None, "e": tail_done and not tail})
        tail_page = tail[: limit - len(page)]
        page += tail_page
        if tail_done and len(tail) == len(tail_page):
            return page, None
        last = tail_page[-1].pk if tail_page else None
        return page, encode_cursor(scope, {"h": head_ids, "o": offset, "k": last})
    head_ids = _int_list(position.get("h"))
    offset = position.get("o")
    after = position.get("k")
    if not isinstance(offset, int) or offset < 0 or not (after is None or isinstance(after, int)):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
    page: list[Comment] = []
    if offset < len(head_ids):
        wanted = head_ids[offset : offset + limit]
        found = {c.pk: c for c in head_rows(wanted)}
        page = [found[i] for i in wanted if i in found]
        offset += len(wanted)
        if offset < len(head_ids):
            return page, encode_cursor(scope, {"h": head_ids, "o": offset, "k": None, "e": position.get("e") is True})
        if position.get("e") is True:
            return page, None
    room = limit - len(page)
    if room <= 0:
        return page, encode_cursor(scope, {"h": head_ids, "o": offset, "k": after})
    tail = list(tail_rows(head_ids, after, room + 1))
    page += tail[:room]
    if len(tail) <= room:
        return page, None
    return page, encode_cursor(scope, {"h": head_ids, "o": offset, "k": tail[room - 1].pk})


def _tail_after_head(head, rows_read, head_query_limit, n, tail_rows):
    """Page 1's share of the tail: ``(tail rows, whether that is all of it)``. The head query
    read ``rows_read`` with ``head_query_limit``; if it came back short and all in the head, the
    list has no tail. Otherwise the tail is read only when the head leaves room on the page."""
    if len(rows_read) < head_query_limit and len(head) == len(rows_read):
        return [], True
    room = n - len(head)
    if room <= 0:
        return [], False
    extra = list(tail_rows([c.pk for c in head], None, room + 1))
    return extra, len(extra) <= room


def _keyset(qs: QuerySet, *, order: str, key: str, after, limit: int, scope: str):
    """Plain keyset pagination on one unique column."""
    if after is not None:
        qs = qs.filter(**{f"{key}__{'gt' if order == 'asc' else 'lt'}": after})
    ordering = key if order == "asc" else f"-{key}"
    rows = list(qs.order_by(ordering)[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(scope, {"k": getattr(rows[-1], "path" if key == "path" else "pk")}) if more else None
    return rows, next_cursor


def _keyset_after(position: dict | None, kind=int):
    if position is None:
        return None
    after = position.get("k")
    if not isinstance(after, kind):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
    return after


# --- the three modes ------------------------------------------------------------------------


def _lateral_previews(viewer: Viewer, root_ids: list[int], per_root: int) -> RawSQL:
    """PostgreSQL: for each root, ``ORDER BY like_count DESC, id LIMIT n`` over the
    ``comment_thread_by_likes`` index in a LATERAL join, so a thread of 10,000 replies costs
    ``n`` index entries. The visibility filter is compiled once by the ORM and reused inside."""
    inner = Comment.objects.filter(visible_q(viewer), root_id__isnull=False).values("id")
    sql, params = inner.query.sql_with_params()
    table = connection.ops.quote_name(Comment._meta.db_table)
    # Django parenthesizes OR groups, so the compiled WHERE is a conjunction we can extend.
    lateral = (
        f"SELECT x.id FROM unnest(%s::bigint[]) AS r(root_id) CROSS JOIN LATERAL ("
        f"{sql} AND {table}.\"root_id\" = r.root_id "
        f"ORDER BY {table}.\"like_count\" DESC, {table}.\"id\" ASC LIMIT %s) AS x"
    )
    return RawSQL(lateral, (list(root_ids), *params, per_root))


def _reply_previews(root_ids: list[int], viewer: Viewer, per_root: int) -> dict[int, list[Comment]]:
    """Up to ``per_root`` hottest visible replies of each root (most likes, ties oldest), in one
    query: a LATERAL join on PostgreSQL, a window function elsewhere (SQLite)."""
    if not root_ids or per_root <= 0:
        return {}
    if connection.vendor == "postgresql":
        chosen = _rows(Comment.objects.filter(pk__in=_lateral_previews(viewer, root_ids, per_root)))
    else:
        ranked = Comment.objects.filter(visible_q(viewer), root_id__in=root_ids).annotate(
            rank=Window(RowNumber(), partition_by=[F("root_id")], order_by=[F("like_count").desc(), F("id").asc()])
        )
        chosen = _rows(ranked.filter(rank__lte=per_root))
    previews: dict[int, list[Comment]] = {}
    for reply in chosen.order_by("root_id", "-like_count", "id"):
        previews.setdefault(reply.root_id, []).append(reply)
    return previews


def list_two_level(
    subject: Subject, viewer: Viewer, *, sort: str, limit: int, cursor: str | None, replies: int
) -> Page:
    """List 1 of two-level mode: top-level comments, pinned first, then by ``sort``, each with
    its hottest replies."""
    scope = f"two_level:{subject.pk}:{sort}"
    roots = Comment.objects.filter(visible_q(viewer), subject_id=subject.pk, depth=0)
    pinned_limit = settings.COMMENTS_PINNED_LIMIT

    def head_rows(ids):
        return _rows(roots.filter(pk__in=ids))

    def tail_rows(exclude, after, n):
        qs = roots.exclude(pk__in=exclude)
        if sort == "old":
            qs = qs.filter(pk__gt=after) if after is not None else qs
            return _rows(qs.order_by("id")[:n])
        qs = qs.filter(pk__lt=after) if after is not None else qs
        return _rows(qs.order_by("-id")[:n])

    def first_page_rows(n):
        if sort == "hot":
            hot_limit = settings.COMMENTS_HOT_LIMIT
            rows = list(_rows(roots.order_by("-pinned", "-hot_score", "-id")[: pinned_limit + hot_limit]))
            head = [c for c in rows if c.pinned][:pinned_limit] + [c for c in rows if not c.pinned][:hot_limit]
            return head, *_tail_after_head(head, rows, pinned_limit + hot_limit, n, tail_rows)
        ordering = ["-pinned", "id" if sort == "old" else "-id"]
        rows = list(_rows(roots.order_by(*ordering)[: n + pinned_limit + 1]))
        head = [c for c in rows if c.pinned][:pinned_limit]
        head_ids = {c.pk for c in head}
        tail = [c for c in rows if c.pk not in head_ids]
        return head, tail, len(rows) < n + pinned_limit + 1

    page, next_cursor = _head_then_tail(
        scope=scope, cursor=cursor, limit=limit,
        first_page_rows=first_page_rows, head_rows=head_rows, tail_rows=tail_rows,
    )
    previews = _reply_previews([c.pk for c in page], viewer, replies)
    every = page + [r for rs in previews.values() for r in rs]
    shown = present_comments(every, viewer)
    items = []
    for c in page:
        item = dict(shown[c.pk])
        item["replies"] = [shown[r.pk] for r in previews.get(c.pk, [])]
        items.append(item)
    return Page(items=items, next_cursor=next_cursor)


def list_replies(root: Comment, viewer: Viewer, *, sort: str, limit: int, cursor: str | None) -> Page:
    """List 2 of two-level mode: every visible reply in the thread of ``root``, flattened.
    ``hot`` starts with the ``COMMENTS_HOT_LIMIT`` most liked replies, then the rest oldest
    first."""
    if root.depth != 0:
        raise InvalidInput("Replies are listed for top-level comments only.")
    scope = f"replies:{root.pk}:{sort}"
    replies = Comment.objects.filter(visible_q(viewer), root_id=root.pk)
    if sort in ("old", "new"):
        after = _keyset_after(decode_cursor(cursor, scope))
        rows, next_cursor = _keyset(
            _rows(replies), order="asc" if sort == "old" else "desc", key="id", after=after, limit=limit, scope=scope
        )
        return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)

    def tail_rows(exclude, after, n):
        qs = replies.exclude(pk__in=exclude)
        if after is not None:
            qs = qs.filter(pk__gt=after)
        return _rows(qs.order_by("id")[:n])

    def first_page_rows(n):
        hot_limit = settings.COMMENTS_HOT_LIMIT
        head = list(_rows(replies.order_by("-like_count", "id")[:hot_limit]))
        return head, *_tail_after_head(head, head, hot_limit, n, tail_rows)

    page, next_cursor = _head_then_tail(
        scope=scope, cursor=cursor, limit=limit, first_page_rows=first_page_rows,
        head_rows=lambda ids: _rows(replies.filter(pk__in=ids)), tail_rows=tail_rows,
    )
    return Page(items=_in_order(page, present_comments(page, viewer)), next_cursor=next_cursor)


def _in_order(rows: list[Comment], shown: dict[int, dict]) -> list[dict]:
    return [shown[c.pk] for c in rows]


def list_flat(subject: Subject, viewer: Viewer, *, sort: str, limit: int, cursor: str | None, mode: str = Mode.FLAT) -> Page:
    """Every visible comment of the subject, every depth, by time; in stacked mode each item
    also carries its chain of ancestors (one more query for all chains of the page)."""
    scope = f"{mode}:{subject.pk}:{sort}"
    after = _keyset_after(decode_cursor(cursor, scope))
    qs = _rows(Comment.objects.filter(visible_q(viewer), subject_id=subject.pk))
    rows, next_cursor = _keyset(qs, order="asc" if sort == "old" else "desc", key="id", after=after, limit=limit, scope=scope)
    if mode != Mode.STACKED:
        return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)
    ancestor_ids = {a for c in rows for a in c.ancestor_ids()}
    ancestors = {c.pk: c for c in _rows(Comment.objects.filter(pk__in=ancestor_ids))} if ancestor_ids else {}
    shown = present_comments(list(rows) + list(ancestors.values()), viewer)
    items = []
    for c in rows:
        item = dict(shown[c.pk])
        item["chain"] = [shown[a] for a in c.ancestor_ids() if a in shown]
        items.append(item)
    return Page(items=items, next_cursor=next_cursor)


def comment_chain(comment: Comment, viewer: Viewer) -> list[dict]:
    """The top-level comment down to ``comment`` itself: ids from the path, rows in one query."""
    ids = paths.split_path(comment.path)
    if comment.reply_to_id is not None and comment.reply_to_id not in ids:
        # Stored as a sibling at the depth cap: the chain still ends with what it answers.
        ids = ids[:-1] + [comment.reply_to_id, comment.pk]
    rows = {c.pk: c for c in _rows(Comment.objects.filter(pk__in=ids[:-1]))} if len(ids) > 1 else {}
    rows[comment.pk] = comment
    shown = present_comments(rows.values(), viewer)
    return [shown[i] for i in ids if i in shown]


def comment_tree(comment: Comment, viewer: Viewer, *, limit: int, cursor: str | None) -> Page:
    """``comment`` and its subtree depth-first, siblings oldest first: one path range scan."""
    scope = f"tree:{comment.pk}"
    after = _keyset_after(decode_cursor(cursor, scope), kind=str)
    low, high = paths.subtree_bounds(comment.path)
    qs = _rows(
        Comment.objects.filter(visible_q(viewer) | Q(pk=comment.pk), subject_id=comment.subject_id, path__gte=low, path__lt=high)
    )
    rows, next_cursor = _keyset(qs, order="asc", key="path", after=after, limit=limit, scope=scope)
    return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)


def user_comments(author: User, user, *, limit: int, cursor: str | None) -> Page:
    """A user's comments across subjects, newest first: everything for themself and staff,
    published (and, for mutual followers, friends-only) for others."""
    viewer = Viewer(user=_authenticated(user), is_moderator=bool(_authenticated(user) and user.is_staff))
    own = viewer.user is not None and viewer.user.pk == author.pk
    qs = Comment.objects.filter(author_id=author.pk)
    if own:
        viewer.is_moderator = False
    elif not viewer.is_moderator:
        qs = qs.filter(status=Status.PUBLISHED)
        public = Q(visibility=Visibility.PUBLIC)
        if viewer.user is not None:
            public |= Q(visibility=Visibility.FRIENDS, author_id__in=friend_ids_query(viewer.user.pk))
        qs = qs.filter(public)
    scope = f"user:{author.pk}"
    after = _keyset_after(decode_cursor(cursor, scope))
    rows, next_cursor = _keyset(_rows(qs), order="desc", key="id", after=after, limit=limit, scope=scope)
    return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)


def user_by_id(user_id: int) -> User:
    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        raise NotFound("Unknown user.")
    return user


def list_comments(subject: Subject, viewer: Viewer, *, mode: str | None, sort: str | None, limit: int, cursor: str | None, replies: int) -> Page:
    """The subject's comments in the requested display mode (the subject's own by default)."""
    mode = mode or subject.mode
    if mode == Mode.TWO_LEVEL:
        sort = sort or "hot"
        return list_two_level(subject, viewer, sort=sort, limit=limit, cursor=cursor, replies=replies)
    sort = sort or "old"
    if sort == "hot":
        raise InvalidInput("sort=hot is only available in two_level mode.", fields={"sort": ["hot is not allowed in this mode."]})
    return list_flat(subject, viewer, sort=sort, limit=limit, cursor=cursor, mode=mode)
