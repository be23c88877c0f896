"""Single rows: the subject being listed (with the viewer riding along), sites, a comment for
one viewer, what an action on a comment needs of it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast

from infra import pagecache, replicas

from .. import rowsql
from ..exceptions import InvalidInput, NotFound
from ..models import Comment, Site, Status, Subject, SubjectKey, User, Visibility
from .visibility import Viewer, authenticated, can_see, sees_private_sql, viewer_sql

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

_SUBJECT_COLUMNS = rowsql.ModelColumns(Subject, "s")
_SITE_COLUMNS = rowsql.ModelColumns(Site, "t")
_SUBJECT_SITE = Subject._meta.get_field("site")


def subject_for_viewer(*, subject_id: int, user: User | AnonymousUser | None) -> tuple[Subject, Viewer]:
    """The subject with its site, and the viewer's role and friends there and whether they see
    comments the public does not, in one query of fixed text (read on every list request)."""
    viewer_columns, params = viewer_sql(user=user, site_ref="s.site_id")
    user = authenticated(user)
    private, private_params = (
        sees_private_sql(user_id=user.pk, subject_id=subject_id) if user is not None else ("0 = 1", [])
    )
    sql = (
        f"SELECT {_SUBJECT_COLUMNS.sql}, {_SITE_COLUMNS.sql}, {viewer_columns}, {private} "
        f"FROM {connection.ops.quote_name(Subject._meta.db_table)} s "
        f"JOIN {connection.ops.quote_name(Site._meta.db_table)} t ON t.id = s.site_id WHERE s.id = %s"
    )
    row = rowsql.fetch_one(sql, [*params, *private_params, subject_id])
    if row is None:
        raise NotFound("Unknown subject.")
    subject = _SUBJECT_COLUMNS.instance(row)
    _SUBJECT_SITE.set_cached_value(subject, _SITE_COLUMNS.instance(row, _SUBJECT_COLUMNS.width))
    is_moderator, friends, sees_private = row[_SUBJECT_COLUMNS.width + _SITE_COLUMNS.width :]
    viewer = Viewer(
        user=user,
        is_moderator=bool(is_moderator),
        _friends=rowsql.parse_id_text(friends) if user else set(),
        sees_private=bool(sees_private),
    )
    return subject, viewer


def subject_lookup(*, site_key: str, key: str) -> Subject:
    """The subject a site calls ``key``, with its site. The site and the subject's id come from
    the shared cache the embed page keeps (``embed_target``), else each from a probe of one
    table by its key; then the subject by id. On Citus each probe goes to one shard, where a
    join of the key table and the subjects (distributed by different columns) would ask them
    all."""
    site, subject_id = embed_target(site_key=site_key, key=key)
    subject = Subject.objects.filter(pk=subject_id).first() if subject_id is not None else None
    if subject is None:
        raise NotFound("Unknown subject.")
    subject.site = site
    return subject


def subject_id_by_key(*, site: Site, key: str) -> int | None:
    """The id of the subject ``site`` calls ``key``, or None."""
    return subject_ids_by_key(site=site, keys=[key]).get(key)


def subject_ids_by_key(*, site: Site, keys: Iterable[str]) -> dict[str, int]:
    """The ids of the subjects ``site`` calls ``keys`` (those it has), by key."""
    return dict(SubjectKey.objects.filter(site=site, key__in=list(keys)).values_list("key", "subject_id"))


def site_by_key(*, site_key: str) -> Site:
    site = Site.objects.filter(key=site_key).first()
    if site is None:
        raise NotFound("Unknown site.")
    return site


def site_signin(*, site: Site) -> dict:
    """The sign-in methods a site allows (API.md, "Sign-in methods")."""
    return {
        "site": site.key,
        "sso": site.signin_sso,
        "email": site.signin_email,
        "oidc": list(site.signin_oidc) if isinstance(site.signin_oidc, list) else [],
        "guests": site.signin_guests,
        "link_email": site.signin_link_email,
        "guest_moderation": site.guest_moderation,
    }


def embed_target(*, site_key: str, key: str) -> tuple[Site, int | None]:
    """The site and the id of its subject ``key`` (None: nobody has commented yet), for the
    embed page, its fragments and lookups by key, from the shared cache when it has them: a
    subject's id never changes, and a site's cached row is dropped whenever the site is saved
    (``pagecache.site_changed``)."""
    site_name, subject_name = pagecache.site_key(site_key), pagecache.lookup_key(site_key, key)
    held = pagecache.hot.get(subject_name)
    if held is not None:
        return held
    found = pagecache.lookups_get([site_name, subject_name])
    site, subject_id = found.get(site_name), found.get(subject_name)
    if site is None:
        site = _site_read_to_cache(site_key)
    if subject_id is None:
        subject_id = subject_id_by_key(site=site, key=key)
        if subject_id is not None:
            pagecache.lookup_set(subject_name, subject_id)
    if subject_id is not None:
        # A widget page read often keeps its lookup in the process like the page itself.
        pagecache.hot.offer(subject_id, subject_name, (site, subject_id), counted=True)
    return site, subject_id


def _site_read_to_cache(site_key: str) -> Site:
    # Cached for every reader, so read with every write made before (a site's settings just
    # saved must not come back from a replica that has not replayed them).
    with replicas.current_reads():
        site = site_by_key(site_key=site_key)
    pagecache.lookup_set(pagecache.site_key(site_key), site)
    return site


# The site ``seed_demo`` makes, which the demo host page (``rundemo``) embeds.
DEMO_SITE_KEY = "demo"


def demo_host_url() -> str | None:
    """The demo host page (the demo site's first allowed origin), or None without the demo."""
    origins = site_allowed_origins(site_key=DEMO_SITE_KEY)
    return f"{origins[0]}/" if origins else None


def site_allowed_origins(*, site_key: str) -> list[str]:
    """The origins allowed to embed the site's widget (and read its counts); none if unknown."""
    return _stripped_origins(Site.objects.filter(key=site_key).values_list("allowed_origins", flat=True).first())


def site_for_counts(*, site_key: str | None, origin: str) -> tuple[str, bool]:
    """The site whose counts a request reads, and whether its ``Origin`` may read them from
    the browser (CORS). A page with counts but no widget (a listing page) names no site: the
    site is then the one whose allowed origins hold the page's origin, as the loader's two
    documented tags promise. ``InvalidInput`` when no site is named and the origin belongs to
    none, or to several. One query."""
    origin = origin.rstrip("/")
    if site_key:
        return site_key, bool(origin) and origin in site_allowed_origins(site_key=site_key)
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


def _stripped_origins(origins: object) -> list[str]:
    return [o.rstrip("/") for o in origins if isinstance(o, str)] if isinstance(origins, list) else []


def subject_counts(*, site_key: str, keys: list[str]) -> dict[str, int]:
    """Public comment counts for many subject keys of one site, unknown keys 0, one query."""
    found = dict(Subject.objects.filter(site__key=site_key, key__in=keys).values_list("key", "comment_count"))
    return {key: found.get(key, 0) for key in keys}


_COMMENT_COLUMNS = rowsql.ModelColumns(Comment, "c")
_AUTHOR_ATTNAMES = ["id", "username", "display_name", "avatar_url", "is_guest"]
_COMMENT_AUTHOR = Comment._meta.get_field("author")
_COMMENT_SUBJECT = Comment._meta.get_field("subject")
_AUTHOR_AND_TARGET = rowsql.columns_sql(rowsql.AUTHOR_AND_TARGET)
_COMMENT_SITE_COLUMNS = rowsql.ModelColumns(Site, "st")  # "t" is the replied-to comment there


def comment_for_viewer(
    *, comment_id: int, user: User | AnonymousUser | None, subject_id: int | None = None
) -> tuple[Comment, Viewer]:
    """One comment with its author's public face, what it replies to, its subject and site, and
    the viewer's role, in one query of fixed text; ``NotFound`` when the viewer may not see it
    (placeholders count as visible), or when it is not a comment of ``subject_id`` if given (a
    link's comment asked for by the widget of one discussion)."""
    viewer_columns, params = viewer_sql(user=user, site_ref="s.site_id")
    q = connection.ops.quote_name
    sql = (
        f"SELECT {_COMMENT_COLUMNS.sql}, {_AUTHOR_AND_TARGET}, "
        f"{_SUBJECT_COLUMNS.sql}, {_COMMENT_SITE_COLUMNS.sql}, {viewer_columns} "
        f"FROM {q(Comment._meta.db_table)} c "
        f"LEFT JOIN {q(User._meta.db_table)} a ON a.id = c.author_id "
        f"LEFT JOIN {q(Comment._meta.db_table)} t ON t.id = c.reply_to_id AND t.subject_id = c.subject_id "
        f"LEFT JOIN {q(User._meta.db_table)} ta ON ta.id = t.author_id "
        f"JOIN {q(Subject._meta.db_table)} s ON s.id = c.subject_id "
        f"JOIN {q(Site._meta.db_table)} st ON st.id = s.site_id WHERE c.id = %s"
        + (" AND c.subject_id = %s" if subject_id is not None else "")
    )
    row = rowsql.fetch_one(sql, [*params, comment_id, *([subject_id] if subject_id is not None else [])])
    if row is None:
        raise NotFound("Unknown comment.")
    comment = _COMMENT_COLUMNS.instance(row)
    at = _COMMENT_COLUMNS.width
    face, comment.reply_target = rowsql.author_and_target(comment.author_id, comment.reply_to_id, row, at)
    author = None
    if face is not None:
        author = User.from_db(
            connection.alias,
            _AUTHOR_ATTNAMES,
            [face.pk, face.username, face.display_name, face.avatar_url, face.is_guest],
        )
    _COMMENT_AUTHOR.set_cached_value(comment, author)
    at += len(rowsql.AUTHOR_AND_TARGET)
    subject = _SUBJECT_COLUMNS.instance(row, at)
    at += _SUBJECT_COLUMNS.width
    _SUBJECT_SITE.set_cached_value(subject, _COMMENT_SITE_COLUMNS.instance(row, at))
    _COMMENT_SUBJECT.set_cached_value(comment, subject)
    is_moderator, friends = row[at + _COMMENT_SITE_COLUMNS.width :]
    user = authenticated(user)
    viewer = Viewer(
        user=user, is_moderator=bool(is_moderator), _friends=rowsql.parse_id_text(friends) if user else set()
    )
    if not can_see(viewer=viewer, comment=comment):
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


def comment_place(*, comment_id: int) -> tuple[int, int]:
    """``(subject_id, site_id)`` of a comment, whoever may see it (facts that never change, so
    callers may keep them); ``NotFound`` for an unknown id."""
    subject_id, site_id, *_ = _comment_row(comment_id)
    return subject_id, site_id


def comment_ref_for_viewer(*, comment_id: int, user: User | AnonymousUser | None) -> CommentRef:
    """A comment ``user`` may see, for acting on it: a published public comment is visible to
    everyone, so one narrow primary-key read settles it; anything else takes the full check
    of ``comment_for_viewer``. ``NotFound`` otherwise."""
    subject_id, site_id, status, visibility, subject_state = _comment_row(comment_id)
    if status != Status.PUBLISHED or visibility != Visibility.PUBLIC:
        comment, _ = comment_for_viewer(comment_id=comment_id, user=user)
        status = comment.status
    return CommentRef(comment_id, subject_id, site_id, status, subject_state)


def comment_floors(*, comment_ids: Iterable[int]) -> dict[int, int]:
    """Floor numbers by comment id, whoever may see the comments (a number tells nothing of
    its comment), in one query."""
    return dict(Comment.objects.filter(pk__in=list(comment_ids)).values_list("pk", "floor"))


def user_by_id(*, user_id: int) -> User:
    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        raise NotFound("Unknown user.")
    return user
