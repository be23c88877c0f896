"""Every read of the comment core, each with a bounded number of queries (asserted in tests).

Lists are keyset-paginated with signed, scoped cursors, so page 500 costs what page 1 costs
and a cursor cannot be replayed against another subject, endpoint, sort or mode. Results are
plain dicts shaped like the API's comment object, projected for one viewer. The rows of every
list come through ``rowsql`` (one hand-written statement shape; see why there); single rows
that services go on to change are loaded as models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from django.conf import settings
from django.core import signing
from django.db import connection
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from . import encoding, hooks, pagecache, paths, replicas, rowsql
from .exceptions import InvalidInput, NotFound
from .models import (
    GONE_STATUSES,
    Comment,
    CommentContent,
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
    # Whether the viewer sees comments of the subject being read that the public does not
    # (read with the subject by ``subject_for_viewer``; True when not known).
    sees_private: bool = True

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None

    def friend_ids(self) -> set[int]:
        """The viewer's mutual followers: loaded with the subject or comment being read
        (``_viewer_sql``), else by one query on first use."""
        if self.user is None:
            return set()
        if self._friends is None:
            sql, params = rowsql.friend_ids_text_sql(self.user.pk)
            with replicas.read_connection().cursor() as cursor:
                cursor.execute(f"SELECT {sql}", params)
                self._friends = rowsql.parse_id_text(cursor.fetchone()[0])
        return self._friends

    def is_friend(self, user_id: int | None) -> bool:
        return user_id is not None and user_id in self.friend_ids()


def _authenticated(user) -> User | None:
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def is_site_moderator(user, site: Site | int) -> bool:
    """Whether ``user`` moderates the site (``site``: the row or its id); staff moderate all."""
    user = _authenticated(user)
    if user is None:
        return False
    if user.is_staff:
        return True
    return Site.moderators.through.objects.filter(site_id=getattr(site, "pk", site), user_id=user.pk).exists()


def viewer_for(user, site: Site) -> Viewer:
    user = _authenticated(user)
    return Viewer(user=user, is_moderator=is_site_moderator(user, site))


def can_see(viewer: Viewer, comment: Comment) -> bool:
    """Python twin of ``rowsql.visible_sql`` for one loaded row."""
    if viewer.is_moderator:
        return True
    if comment.status in GONE_STATUSES:
        if comment.descendant_count > 0:
            return True
        if viewer.user is None:
            return False
        # The rare case (a gone row without public descendants): ask the list filter itself.
        visible, params = rowsql.visible_sql(viewer)
        return bool(rowsql.fetch_ids([comment.pk], visible, params))
    own = viewer.user is not None and comment.author_id == viewer.user.pk
    if comment.status in (Status.PENDING, Status.SHADOW):
        return own
    if comment.visibility == Visibility.FRIENDS:
        return own or viewer.is_friend(comment.author_id)
    return True


# --- loading subjects and single comments ----------------------------------------------------


_SUBJECT_COLUMNS = rowsql.ModelColumns(Subject, "s")
_SITE_COLUMNS = rowsql.ModelColumns(Site, "t")
_SUBJECT_SITE = Subject._meta.get_field("site")


def _viewer_sql(user, site_ref: str) -> tuple[str, list]:
    """Two SQL columns, whether ``user`` moderates the site at ``site_ref`` and the user's
    friend ids as text, so the viewer rides along with the row being read."""
    user = _authenticated(user)
    if user is None:
        return "0 = 1, NULL", []
    friends, params = rowsql.friend_ids_text_sql(user.pk)
    if user.is_staff:
        return f"1 = 1, {friends}", params
    moderators = connection.ops.quote_name(Site.moderators.through._meta.db_table)
    return (
        f"EXISTS (SELECT 1 FROM {moderators} m WHERE m.site_id = {site_ref} AND m.user_id = %s), {friends}",
        [user.pk, *params],
    )


def subject_for_viewer(subject_id: int, user) -> tuple[Subject, Viewer]:
    """The subject with its site, and the viewer's role and friends there and whether they see
    comments the public does not, in one query of fixed text (read on every list request)."""
    viewer_sql, params = _viewer_sql(user, "s.site_id")
    user = _authenticated(user)
    private, private_params = rowsql.sees_private_sql(user.pk, "s.id") if user is not None else ("0 = 1", [])
    sql = (
        f"SELECT {_SUBJECT_COLUMNS.sql}, {_SITE_COLUMNS.sql}, {viewer_sql}, {private} "
        f"FROM {connection.ops.quote_name(Subject._meta.db_table)} s "
        f"JOIN {connection.ops.quote_name(Site._meta.db_table)} t ON t.id = s.site_id WHERE s.id = %s"
    )
    row = rowsql.fetch_one(sql, [*params, *private_params, subject_id])
    if row is None:
        raise NotFound("Unknown subject.")
    subject = _SUBJECT_COLUMNS.instance(row)
    _SUBJECT_SITE.set_cached_value(subject, _SITE_COLUMNS.instance(row, _SUBJECT_COLUMNS.width))
    is_moderator, friends, sees_private = row[_SUBJECT_COLUMNS.width + _SITE_COLUMNS.width:]
    viewer = Viewer(
        user=user, is_moderator=bool(is_moderator), _friends=rowsql.parse_id_text(friends) if user else set(),
        sees_private=bool(sees_private),
    )
    return subject, viewer


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


def site_signin(site: Site) -> dict:
    """The sign-in methods a site allows (API.md, "Sign-in methods")."""
    return {
        "site": site.key,
        "sso": site.signin_sso,
        "email": site.signin_email,
        "oidc": list(site.signin_oidc) if isinstance(site.signin_oidc, list) else [],
        "guests": site.signin_guests,
    }


def embed_target(site_key: str, key: str) -> tuple[Site, int | None]:
    """The site and the id of its subject ``key`` (None: nobody has commented yet), for the
    embed page, from the shared cache when it has them: a subject's id never changes, and a
    site's cached row is dropped whenever the site is saved (``pagecache.site_changed``)."""
    site_name, subject_name = pagecache.site_key(site_key), pagecache.lookup_key(site_key, key)
    held = pagecache.hot.get(subject_name)
    if held is not None:
        return held
    found = pagecache.lookups_get([site_name, subject_name])
    site, subject_id = found.get(site_name), found.get(subject_name)
    if site is None:
        # Cached for every reader, so read with every write made before (a site's settings
        # just saved must not come back from a replica that has not replayed them).
        with replicas.current_reads():
            site = site_by_key(site_key)
        pagecache.lookup_set(site_name, site)
    if subject_id is None:
        subject_id = Subject.objects.filter(site=site, key=key).values_list("pk", flat=True).first()
        if subject_id is not None:
            pagecache.lookup_set(subject_name, subject_id)
    if subject_id is not None:
        # A widget page read often keeps its lookup in the process like the page itself.
        pagecache.hot.offer(subject_id, subject_name, (site, subject_id), counted=True)
    return site, subject_id


# The site ``seed_demo`` makes, which the demo host page (``rundemo``) embeds.
DEMO_SITE_KEY = "demo"


def demo_host_url() -> str | None:
    """The demo host page (the demo site's first allowed origin), or None without the demo."""
    origins = site_allowed_origins(DEMO_SITE_KEY)
    return f"{origins[0]}/" if origins else None


def site_allowed_origins(site_key: str) -> list[str]:
    """The origins allowed to embed the site's widget (and read its counts); none if unknown."""
    return _stripped_origins(Site.objects.filter(key=site_key).values_list("allowed_origins", flat=True).first())


def site_for_counts(site_key: str | None, origin: str) -> tuple[str, bool]:
    """The site whose counts a request reads, and whether its ``Origin`` may read them from
    the browser (CORS). A page with counts but no widget (a listing page) names no site: the
    site is then the one whose allowed origins hold the page's origin, as the loader's two
    documented tags promise. ``InvalidInput`` when no site is named and the origin belongs to
    none, or to several. One query."""
    origin = origin.rstrip("/")
    if site_key:
        return site_key, bool(origin) and origin in site_allowed_origins(site_key)
    if origin:
        # The list's JSON text holds '"<origin>' when the list may hold the origin (the same
        # text on PostgreSQL's jsonb and SQLite's); the exact match is made on the rows read.
        candidates = (
            Site.objects.annotate(origins_text=Cast("allowed_origins", TextField()))
            .filter(origins_text__contains=f'"{origin}')
            .values_list("key", "allowed_origins")
        )
        keys = [key for key, origins in candidates if origin in _stripped_origins(origins)]
        if len(keys) == 1:
            return keys[0], True
    raise InvalidInput(
        "Name the site, or ask from a page on one site's allowed origins.",
        fields={"site": ["Required unless the request comes from a page on one site's allowed origins."]},
    )


def _stripped_origins(origins) -> list[str]:
    return [o.rstrip("/") for o in origins if isinstance(o, str)] if isinstance(origins, list) else []


def subject_counts(site_key: str, keys: list[str]) -> dict[str, int]:
    """Public comment counts for many subject keys of one site, unknown keys 0, one query."""
    found = dict(
        Subject.objects.filter(site__key=site_key, key__in=keys).values_list("key", "comment_count")
    )
    return {key: found.get(key, 0) for key in keys}


def _reply_target(c) -> rowsql.ReplyTarget | Comment | None:
    if c.reply_to_id is None:
        return None
    if isinstance(c, rowsql.CommentRow):
        return c.reply_target
    if not hasattr(c, "rt_status"):
        return c.reply_to  # a row loaded another way (e.g. just created)
    author = None
    if c.rt_author_id is not None:
        author = rowsql.UserFace(c.rt_author_id, c.rt_author_username, c.rt_author_display_name, c.rt_author_avatar_url)
    return rowsql.ReplyTarget(c.reply_to_id, c.rt_status, c.rt_visibility, c.rt_descendant_count, c.rt_author_id, author)


_COMMENT_COLUMNS = rowsql.ModelColumns(Comment, "c")
_AUTHOR_ATTNAMES = ["id", "username", "display_name", "avatar_url"]
_COMMENT_AUTHOR = Comment._meta.get_field("author")
_COMMENT_SUBJECT = Comment._meta.get_field("subject")
_REPLY_TARGET_FIELDS = (
    "rt_status", "rt_visibility", "rt_descendant_count", "rt_author_id",
    "rt_author_username", "rt_author_display_name", "rt_author_avatar_url",
)


def comment_for_viewer(comment_id: int, user) -> tuple[Comment, Viewer]:
    """One comment with its author's public face, what it replies to, its subject and site, and
    the viewer's role, in one query of fixed text; ``NotFound`` when the viewer may not see it
    (placeholders count as visible)."""
    viewer_sql, params = _viewer_sql(user, "s.site_id")
    q = connection.ops.quote_name
    sql = (
        f"SELECT {_COMMENT_COLUMNS.sql}, a.username, a.display_name, a.avatar_url, "
        "r.status, r.visibility, r.descendant_count, r.author_id, ra.username, ra.display_name, ra.avatar_url, "
        f"{_SUBJECT_COLUMNS.sql}, {_SITE_COLUMNS.sql}, {viewer_sql} "
        f"FROM {q(Comment._meta.db_table)} c "
        f"LEFT JOIN {q(User._meta.db_table)} a ON a.id = c.author_id "
        f"LEFT JOIN {q(Comment._meta.db_table)} r ON r.id = c.reply_to_id "
        f"LEFT JOIN {q(User._meta.db_table)} ra ON ra.id = r.author_id "
        f"JOIN {q(Subject._meta.db_table)} s ON s.id = c.subject_id "
        f"JOIN {q(Site._meta.db_table)} t ON t.id = s.site_id WHERE c.id = %s"
    )
    row = rowsql.fetch_one(sql, [*params, comment_id])
    if row is None:
        raise NotFound("Unknown comment.")
    comment = _COMMENT_COLUMNS.instance(row)
    at = _COMMENT_COLUMNS.width
    author = None
    if comment.author_id is not None:
        author = User.from_db(connection.alias, _AUTHOR_ATTNAMES, [comment.author_id, *row[at:at + 3]])
    _COMMENT_AUTHOR.set_cached_value(comment, author)
    for name, value in zip(_REPLY_TARGET_FIELDS, row[at + 3:at + 10]):
        setattr(comment, name, value)
    at += 10
    subject = _SUBJECT_COLUMNS.instance(row, at)
    at += _SUBJECT_COLUMNS.width
    _SUBJECT_SITE.set_cached_value(subject, _SITE_COLUMNS.instance(row, at))
    _COMMENT_SUBJECT.set_cached_value(comment, subject)
    is_moderator, friends = row[at + _SITE_COLUMNS.width:]
    user = _authenticated(user)
    viewer = Viewer(user=user, is_moderator=bool(is_moderator), _friends=rowsql.parse_id_text(friends) if user else set())
    if not can_see(viewer, comment):
        raise NotFound("Unknown comment.")
    return comment, viewer


@dataclass(frozen=True, slots=True)
class CommentRef:
    """What an action on a comment (a like, a report) needs of it."""

    pk: int
    subject_id: int
    site_id: int
    status: str
    subject_state: str


def _comment_row(comment_id: int) -> tuple[int, int, str, str, str]:
    """``(subject_id, site_id, status, visibility, subject state)`` of a comment; ``NotFound``
    if unknown."""
    row = rowsql.fetch_one(
        f"SELECT c.subject_id, s.site_id, c.status, c.visibility, s.state "
        f"FROM {connection.ops.quote_name(Comment._meta.db_table)} c "
        f"JOIN {connection.ops.quote_name(Subject._meta.db_table)} s ON s.id = c.subject_id WHERE c.id = %s",
        [comment_id],
    )
    if row is None:
        raise NotFound("Unknown comment.")
    return row


def comment_place(comment_id: int) -> tuple[int, int]:
    """``(subject_id, site_id)`` of a comment, whoever may see it (facts that never change, so
    callers may keep them); ``NotFound`` for an unknown id."""
    subject_id, site_id, *_ = _comment_row(comment_id)
    return subject_id, site_id


def comment_ref_for_viewer(comment_id: int, user) -> CommentRef:
    """A comment ``user`` may see, for acting on it: a published public comment is visible to
    everyone, so one narrow primary-key read settles it; anything else takes the full check
    of ``comment_for_viewer``. ``NotFound`` otherwise."""
    subject_id, site_id, status, visibility, subject_state = _comment_row(comment_id)
    if status != Status.PUBLISHED or visibility != Visibility.PUBLIC:
        comment, _ = comment_for_viewer(comment_id, user)
        status = comment.status
    return CommentRef(comment_id, subject_id, site_id, status, subject_state)


def comment_floors(comment_ids: Iterable[int]) -> dict[int, int]:
    """Floor numbers by comment id, whoever may see the comments (a number tells nothing of
    its comment), in one query."""
    return dict(Comment.objects.filter(pk__in=list(comment_ids)).values_list("pk", "floor"))


# --- presenting ----------------------------------------------------------------------------


def present_user(user: "User | rowsql.UserFace | None") -> dict | None:
    if user is None:
        return None
    return {"id": user.pk, "name": user.public_name, "avatar": user.avatar_url or None}


def _is_placeholder(viewer: Viewer, comment: Comment) -> bool:
    """Content hidden from this viewer: deleted/rejected for non-moderators, or a chain ancestor
    the viewer may not read."""
    return not viewer.is_moderator and (comment.status in GONE_STATUSES or not can_see(viewer, comment))


def _shown_status(viewer: Viewer, comment: Comment, placeholder: bool) -> str:
    """What the viewer is told of the status, given ``_is_placeholder`` of the comment."""
    if viewer.is_moderator:
        return comment.status
    if placeholder:
        return comment.status if comment.status in GONE_STATUSES else Status.DELETED
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
    among, among_params = rowsql.any_of("cc.comment_id", comment_ids)
    sql = f"SELECT cc.comment_id, cc.body, cc.html, {liked} FROM {table} cc WHERE {among}"
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, [*params, *among_params])
        return {row[0]: (row[1], row[2], bool(row[3])) for row in cursor.fetchall()}


def present_new_comment(comment: Comment, viewer: Viewer) -> dict:
    """The API shape of a comment ``comment_create`` has just written: its content row is at
    hand and nobody likes it yet, so nothing is read."""
    return present_comments([comment], viewer, just_written=True)[comment.pk]


def present_comments(rows: Iterable[Comment], viewer: Viewer, *, just_written: bool = False) -> dict[int, dict]:
    """API-shaped dicts for ``rows``: one query for contents, and the like state from the live
    store in one round trip (or, without one, the viewer's likes in the same content query)."""
    rows = list({c.pk: c for c in rows}.values())
    placeholders = {c.pk: _is_placeholder(viewer, c) for c in rows}
    if just_written:
        like_state = {c.pk: (0, False) for c in rows}
        contents = {c.pk: (c.content.body, c.content.html, False) for c in rows}
    else:
        # Live like state where the store has it; the rest (no store, or comments whose state
        # is not loaded) from the rows, with "liked" riding along the content query.
        like_state = hooks.page_like_state([(c.pk, c.subject_id) for c in rows], viewer.user_id) or {}
        readable = [pk for pk, hidden in placeholders.items() if not hidden]
        every_live = all(c.pk in like_state for c in rows)
        contents = _contents(readable, None if every_live else hooks.liked_sql(viewer.user_id))
    out = {}
    for c in rows:
        placeholder = placeholders[c.pk]
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
            "status": _shown_status(viewer, c, placeholder),
            "visibility": c.visibility,
            "pinned": c.pinned,
            "featured": c.featured,
            "like_count": like_state[c.pk][0] if c.pk in like_state else c.like_count,
            "liked": like_state[c.pk][1] if c.pk in like_state else content is not None and content[2],
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


def _keyset(where: str, params: list, *, order: str, key: str, after, limit: int, scope: str):
    """Plain keyset pagination of the rows matching ``where`` on one unique column."""
    if after is not None:
        where = f"{where} AND c.{key} {'>' if order == 'asc' else '<'} %s"
        params = [*params, after]
    found = rowsql.fetch(where, params, order=f"c.{key} {'ASC' if order == 'asc' else 'DESC'}", limit=limit + 1)
    page = found[:limit]
    next_cursor = None
    if len(found) > limit:
        next_cursor = encode_cursor(scope, {"k": page[-1].path if key == "path" else page[-1].pk})
    return page, next_cursor


def _excluding(where: str, params: list, exclude: list[int], after, order: str) -> tuple[str, list]:
    """``where`` narrowed to ids not in ``exclude`` and past ``after`` in ``order``."""
    params = list(params)
    if exclude:
        among, among_params = rowsql.any_of("c.id", exclude)
        where = f"{where} AND NOT ({among})"
        params += among_params
    if after is not None:
        where = f"{where} AND c.id {'>' if order == 'asc' else '<'} %s"
        params.append(after)
    return where, params


def _keyset_after(position: dict | None, kind=int):
    if position is None:
        return None
    after = position.get("k")
    if not isinstance(after, kind) or isinstance(after, bool):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
    return after


def page_by_id(rows: QuerySet, *, scope: str, cursor: str | None, limit: int, newest_first: bool = False) -> Page:
    """A page of ``rows`` (any model's queryset) in primary key order, oldest first unless
    ``newest_first``: ``limit`` model instances as ``items``, and the cursor of the next page
    (None on the last), scoped like every list's. One query whatever the page."""
    after = _keyset_after(decode_cursor(cursor, scope))
    if after is not None:
        rows = rows.filter(pk__lt=after) if newest_first else rows.filter(pk__gt=after)
    found = list(rows.order_by("-pk" if newest_first else "pk")[: limit + 1])
    page = found[:limit]
    return Page(items=page, next_cursor=encode_cursor(scope, {"k": page[-1].pk}) if len(found) > limit else None)


# --- the three modes ------------------------------------------------------------------------


def _reply_previews(root_ids: list[int], viewer: Viewer, per_root: int) -> dict[int, list[rowsql.CommentRow]]:
    """Up to ``per_root`` hottest visible replies of each root (most likes, ties oldest), in one
    query. PostgreSQL: ``ORDER BY like_count DESC, id LIMIT n`` per root in a LATERAL join over
    the ``comment_thread_by_likes`` index, so a thread of 10,000 replies costs ``n`` index
    entries. Elsewhere (SQLite) a window function ranks the replies of the page's roots."""
    if not root_ids or per_root <= 0:
        return {}
    visible, params = rowsql.visible_sql(viewer, "p")
    table = connection.ops.quote_name(Comment._meta.db_table)
    if connection.vendor == "postgresql":
        chosen = (
            f"c.id IN (SELECT x.id FROM unnest(%s::bigint[]) AS r(root_id) CROSS JOIN LATERAL ("
            f"SELECT p.id FROM {table} p WHERE p.root_id = r.root_id AND {visible} "
            f"ORDER BY p.like_count DESC, p.id ASC LIMIT %s) AS x)"
        )
        chosen_params = [list(root_ids), *params, per_root]
    else:
        among, among_params = rowsql.any_of("p.root_id", root_ids)
        chosen = (
            f"c.id IN (SELECT ranked.id FROM (SELECT p.id, ROW_NUMBER() OVER (PARTITION BY p.root_id "
            f"ORDER BY p.like_count DESC, p.id ASC) AS rank FROM {table} p "
            f"WHERE {among} AND {visible}) AS ranked WHERE ranked.rank <= %s)"
        )
        chosen_params = [*among_params, *params, per_root]
    previews: dict[int, list[rowsql.CommentRow]] = {}
    for reply in rowsql.fetch(chosen, chosen_params, order="c.root_id, c.like_count DESC, c.id"):
        previews.setdefault(reply.root_id, []).append(reply)
    return previews


def list_two_level(
    subject: Subject, viewer: Viewer, *, sort: str, limit: int, cursor: str | None, replies: int
) -> Page:
    """List 1 of two-level mode: top-level comments, pinned first, then by ``sort``, each with
    its hottest replies."""
    scope = f"two_level:{subject.pk}:{sort}"
    visible, visible_params = rowsql.visible_sql(viewer)
    # "depth = 0" is literal so the planner can use the partial indexes of top-level rows.
    roots, roots_params = f"c.subject_id = %s AND c.depth = 0 AND {visible}", [subject.pk, *visible_params]
    pinned_limit = settings.COMMENTS_PINNED_LIMIT
    tail_order = "asc" if sort == "old" else "desc"

    def head_rows(ids):
        return rowsql.fetch_ids(ids, roots, roots_params)

    def tail_rows(exclude, after, n):
        where, params = _excluding(roots, roots_params, exclude, after, tail_order)
        return rowsql.fetch(where, params, order=f"c.id {tail_order.upper()}", limit=n)

    def first_page_rows(n):
        if sort == "hot":
            hot_limit = settings.COMMENTS_HOT_LIMIT
            rows = rowsql.fetch(
                roots, roots_params, order="c.pinned DESC, c.hot_score DESC, c.id DESC", limit=pinned_limit + hot_limit
            )
            head = [c for c in rows if c.pinned][:pinned_limit] + [c for c in rows if not c.pinned][:hot_limit]
            return head, *_tail_after_head(head, rows, pinned_limit + hot_limit, n, tail_rows)
        rows = rowsql.fetch(roots, roots_params, order=f"c.pinned DESC, c.id {tail_order.upper()}", limit=n + pinned_limit + 1)
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
        item = shown[c.pk]
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
    visible, visible_params = rowsql.visible_sql(viewer)
    replies, replies_params = f"c.root_id = %s AND {visible}", [root.pk, *visible_params]
    if sort in ("old", "new"):
        after = _keyset_after(decode_cursor(cursor, scope))
        rows, next_cursor = _keyset(
            replies, replies_params, order="asc" if sort == "old" else "desc", key="id", after=after, limit=limit, scope=scope
        )
        return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)

    def tail_rows(exclude, after, n):
        where, params = _excluding(replies, replies_params, exclude, after, "asc")
        return rowsql.fetch(where, params, order="c.id ASC", limit=n)

    def first_page_rows(n):
        hot_limit = settings.COMMENTS_HOT_LIMIT
        head = rowsql.fetch(replies, replies_params, order="c.like_count DESC, c.id ASC", limit=hot_limit)
        return head, *_tail_after_head(head, head, hot_limit, n, tail_rows)

    page, next_cursor = _head_then_tail(
        scope=scope, cursor=cursor, limit=limit, first_page_rows=first_page_rows,
        head_rows=lambda ids: rowsql.fetch_ids(ids, replies, replies_params), tail_rows=tail_rows,
    )
    return Page(items=_in_order(page, present_comments(page, viewer)), next_cursor=next_cursor)


def _in_order(rows: list[Comment], shown: dict[int, dict]) -> list[dict]:
    return [shown[c.pk] for c in rows]


def list_flat(subject: Subject, viewer: Viewer, *, sort: str, limit: int, cursor: str | None, mode: str = Mode.FLAT) -> Page:
    """Every visible comment of the subject, every depth, by time; in stacked mode each item
    also carries its chain of ancestors (one more query for all chains of the page)."""
    scope = f"{mode}:{subject.pk}:{sort}"
    after = _keyset_after(decode_cursor(cursor, scope))
    visible, visible_params = rowsql.visible_sql(viewer)
    rows, next_cursor = _keyset(
        f"c.subject_id = %s AND {visible}", [subject.pk, *visible_params],
        order="asc" if sort == "old" else "desc", key="id", after=after, limit=limit, scope=scope,
    )
    if mode != Mode.STACKED:
        return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)
    ancestors = rowsql.fetch_ids({a for c in rows for a in c.ancestor_ids()})
    shown = present_comments([*rows, *ancestors], viewer)
    items = []
    for c in rows:
        item = dict(shown[c.pk])  # a row of the page may also sit in another row's chain
        item["chain"] = [shown[a] for a in c.ancestor_ids() if a in shown]
        items.append(item)
    return Page(items=items, next_cursor=next_cursor)


def comment_chain(comment: Comment, viewer: Viewer) -> list[dict]:
    """The top-level comment down to ``comment`` itself: ids from the path, rows in one query."""
    ids = paths.split_path(comment.path)
    if comment.reply_to_id is not None and comment.reply_to_id not in ids:
        # Stored as a sibling at the depth cap: the chain still ends with what it answers.
        ids = ids[:-1] + [comment.reply_to_id, comment.pk]
    rows = {c.pk: c for c in rowsql.fetch_ids(ids[:-1])}
    rows[comment.pk] = comment
    shown = present_comments(rows.values(), viewer)
    return [shown[i] for i in ids if i in shown]


def comment_tree(comment: Comment, viewer: Viewer, *, limit: int, cursor: str | None) -> Page:
    """``comment`` and its subtree depth-first, siblings oldest first: one path range scan."""
    scope = f"tree:{comment.pk}"
    after = _keyset_after(decode_cursor(cursor, scope), kind=str)
    low, high = paths.subtree_bounds(comment.path)
    visible, visible_params = rowsql.visible_sql(viewer)
    rows, next_cursor = _keyset(
        f"c.subject_id = %s AND c.path >= %s AND c.path < %s AND ({visible} OR c.id = %s)",
        [comment.subject_id, low, high, *visible_params, comment.pk],
        order="asc", key="path", after=after, limit=limit, scope=scope,
    )
    return Page(items=_in_order(rows, present_comments(rows, viewer)), next_cursor=next_cursor)


def user_comments(author: User, user, *, limit: int, cursor: str | None) -> Page:
    """A user's comments across subjects, newest first: everything for themself and staff,
    published (and, for mutual followers, friends-only) for others."""
    viewer = Viewer(user=_authenticated(user), is_moderator=bool(_authenticated(user) and user.is_staff))
    own = viewer.user is not None and viewer.user.pk == author.pk
    where, params = "c.author_id = %s", [author.pk]
    if own:
        viewer.is_moderator = False
    elif not viewer.is_moderator:
        where += f" AND c.status = '{Status.PUBLISHED}'"
        if viewer.user is None:
            where += f" AND c.visibility = '{Visibility.PUBLIC}'"
        else:
            friends, friend_params = rowsql.friends_sql(viewer.user.pk)
            where += (
                f" AND (c.visibility = '{Visibility.PUBLIC}' OR "
                f"(c.visibility = '{Visibility.FRIENDS}' AND c.author_id IN ({friends})))"
            )
            params += friend_params
    scope = f"user:{author.pk}"
    after = _keyset_after(decode_cursor(cursor, scope))
    rows, next_cursor = _keyset(where, params, order="desc", key="id", after=after, limit=limit, scope=scope)
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


# --- pages through the shared cache (pagecache) ---------------------------------------------


def _page_json(page: Page) -> bytes:
    return encoding.dumps({"items": page.items, "next_cursor": page.next_cursor})


def hot_list_page(subject_id: int, query_string: str, *, gzip: bool = False) -> tuple[bytes, bool] | None:
    """An anonymous reader's page of a hot subject from this process's memory, found by the
    request's raw query string, before the query is validated (it was, when the copy was kept
    by ``list_comments_json``): ``(body, compressed)``, gzip-compressed when ``gzip``; None
    otherwise. Only for a reader the caller knows to be anonymous."""
    return pagecache.hot_request_copy(subject_id, query_string, gzip=gzip)


def list_comments_json(
    subject_id: int, user, *, mode: str | None, sort: str | None, limit: int, cursor: str | None, replies: int,
    query_string: str = "",
) -> pagecache.Read:
    """``list_comments`` of the subject for ``user`` as the API's JSON bytes (``.entry`` of the
    answer; ``.stale`` when the database could not rebuild it), through the shared page cache:
    an anonymous reader gets the shared page as it is (and a hot one is kept under the request's
    ``query_string`` for ``hot_list_page``); a signed-in reader who sees what the public sees
    gets it with their ``liked`` flags and live like counts laid over it; moderators, and
    readers who see pending, shadow or friends-only comments of the subject (their authors and
    the authors' mutual followers), get a page of their own from the database."""
    user = _authenticated(user)
    options = {"mode": mode, "sort": sort, "limit": limit, "cursor": cursor, "replies": replies}
    if not pagecache.enabled():
        subject, viewer = subject_for_viewer(subject_id, user)
        return pagecache.Read(_page_json(list_comments(subject, viewer, **options)), False)
    variant = f"api:{mode or ''}:{sort or ''}:{limit}:{replies}:{cursor or ''}"
    if user is None:
        read = pagecache.shared_entry(
            subject_id, variant, lambda: _page_json(list_comments(*subject_for_viewer(subject_id, None), **options)),
            stale_ok=True,
        )
        if not read.stale:
            pagecache.keep_request_copy(subject_id, query_string, read.entry)
        return read
    subject, viewer = subject_for_viewer(subject_id, user)
    if viewer.is_moderator or viewer.sees_private:
        return pagecache.Read(_page_json(list_comments(subject, viewer, **options)), False)
    own = []

    def public_from_own() -> bytes:
        # This viewer's page is the public one but for their "liked" flags (counts are the
        # same for everyone), so one read of the database makes both.
        page = list_comments(subject, viewer, **options)
        own.append(_page_json(page))
        for c in _each_comment(page.items):
            c["liked"] = False
        return _page_json(page)

    read = pagecache.shared_entry(subject_id, variant, public_from_own, stale_ok=False, fresh=True)
    if not read.cached:
        return pagecache.Read(own[0], False)
    return pagecache.Read(_with_viewer_likes(read.entry, subject_id, viewer), True)


def _each_comment(items: list[dict]):
    for item in items:
        yield item
        yield from item.get("replies", ())
        yield from item.get("chain", ())


def _with_viewer_likes(entry: bytes, subject_id: int, viewer: Viewer) -> bytes:
    """The shared page with the viewer's ``liked`` flags and the live like counts: from the live
    store in one round trip, and, for comments whose state it does not hold, ``liked`` from the
    database in one query."""
    page = encoding.loads(entry)
    shown = list(_each_comment(page["items"]))
    if not shown:
        return entry
    live = hooks.page_like_state([(c["id"], subject_id) for c in shown], viewer.user_id) or {}
    readable = {c["id"] for c in shown if c["id"] not in live and c["status"] not in GONE_STATUSES}
    liked = _liked_ids(readable, viewer.user_id)
    for c in shown:
        state = live.get(c["id"])
        if state is not None:
            c["like_count"], c["liked"] = state
        else:
            c["liked"] = c["id"] in liked
    return encoding.dumps(page)


def _liked_ids(comment_ids: set[int], user_id: int) -> set[int]:
    """Which of ``comment_ids`` the user likes, by the likes app's ``liked`` expression."""
    expression = hooks.liked_sql(user_id)
    if not comment_ids or expression is None:
        return set()
    liked, params = expression
    among, among_params = rowsql.any_of("cc.comment_id", comment_ids)
    table = connection.ops.quote_name(CommentContent._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT cc.comment_id FROM {table} cc WHERE {among} AND {liked}", [*among_params, *params])
        return {row[0] for row in cursor.fetchall()}
