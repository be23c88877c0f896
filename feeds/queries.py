"""Every read of feeds: the comments an anonymous reader may see, newest first, for the RSS and
Atom feeds of a site and of a subject, and the recent and top comments of a site (the API
behind a "latest comments" sidebar). Built on the core's public query helpers: rows by
``rowsql.fetch`` (one statement, authors joined), shown by ``present_comments`` (one statement
for their contents, likes from the live store), with their subjects in one more.

Who may see: published, public comments only (never pending, shadow, friends-only, deleted or
rejected ones); the recent and top lists only those of open subjects."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from comments import rowsql
from comments.exceptions import InvalidInput, NotFound
from comments.models import Site, Status, Subject, SubjectState, Visibility
from comments.queries import (
    Page,
    Viewer,
    decode_cursor,
    encode_cursor,
    present_comments,
    site_by_key,
    subject_id_by_key,
)
from infra import encoding

_SUBJECT = connection.ops.quote_name(Subject._meta.db_table)
_PUBLIC = rowsql.Sql(f"c.status = '{Status.PUBLISHED}' AND c.visibility = '{Visibility.PUBLIC}'")
_NEWEST_FIRST = (("id", "desc"),)
_MALFORMED = {"cursor": ["Malformed cursor."]}


def _of_site(site_id: int, *, open_only: bool) -> rowsql.Sql:
    state = f" AND s.state = '{SubjectState.OPEN}'" if open_only else ""
    return _PUBLIC & rowsql.Sql(
        f"c.subject_id IN (SELECT s.id FROM {_SUBJECT} s WHERE s.site_id = %s{state})", (site_id,)
    )


def web_url(url: str | None) -> str | None:
    """``url`` when it is an http or https URL with a host, else None. A subject's URL is
    stored as its site, an import or the admin gave it, and whatever shows it as a link (a feed
    reader, a host's sidebar) would run a ``javascript:`` one or open a ``data:`` one; a URL
    with a space or a control character is refused rather than cleaned, since readers and
    browsers each clean it their own way."""
    if not url or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.hostname else None


def _subjects_of(rows: list[rowsql.CommentRow]) -> dict[int, dict]:
    ids = {r.subject_id for r in rows}
    return (
        {
            s["id"]: {**s, "url": web_url(s["url"])}
            for s in Subject.objects.filter(pk__in=ids).values("id", "key", "title", "url")
        }
        if ids
        else {}
    )


def _shown(rows: list[rowsql.CommentRow]) -> list[dict]:
    """The rows as the API shows them to an anonymous reader, each with its subject."""
    shown = present_comments(rows=rows, viewer=Viewer(user=None))
    subjects = _subjects_of(rows)
    return [{**shown[r.pk], "subject": subjects[r.subject_id]} for r in rows]


# --- feeds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedListing:
    """What a feed shows: its site, its subject (None for the site's feed), its entries (the
    comment objects of the API, each with ``subject``), newest first."""

    site: Site
    subject: Subject | None
    entries: list[dict]

    @property
    def subject_url(self) -> str | None:
        """The subject's page, when it has one that may be a link (``web_url``)."""
        return web_url(self.subject.url) if self.subject is not None else None

    @property
    def last_modified(self) -> datetime:
        """The newest post or edit shown (the subject's or site's creation when there is none)."""
        moments = [e["edited_at"] or e["created_at"] for e in self.entries]
        return max(moments, default=(self.subject or self.site).created_at)

    def etag(self, kind: str) -> str:
        """Changes with anything shown: an entry added, removed (deleted, held), edited."""
        digest = hashlib.sha256(kind.encode())
        for e in self.entries:
            digest.update(f"|{e['id']}:{e['edited_at'] or ''}:{e['author']['name'] if e['author'] else ''}".encode())
        if self.subject is not None:
            digest.update(f"|{self.subject.title}|{self.subject.url}".encode())
        digest.update(f"|{self.site.name}".encode())
        return f'"{digest.hexdigest()[:32]}"'


def site_feed(*, site_key: str) -> FeedListing:
    """The site's newest ``FEEDS_ITEMS`` published public comments, across its subjects."""
    site = site_by_key(site_key=site_key)
    rows = rowsql.fetch(_of_site(site.pk, open_only=False), order=_NEWEST_FIRST, limit=settings.FEEDS_ITEMS)
    return FeedListing(site=site, subject=None, entries=_shown(rows))


_KEY_MAX = 255  # comment_subject.key's length


def subject_feed_by_key(*, site_key: str, key: str) -> FeedListing:
    """The feed of the site's subject ``key`` (the widget's ``data-key``: what a static
    template knows of its page); an unknown key is not found, and makes no subject."""
    site = site_by_key(site_key=site_key)
    # No key holds a NUL or runs past the column: such a query string names nothing (and a
    # NUL is one PostgreSQL would refuse to compare).
    if "\x00" in key or len(key) > _KEY_MAX:
        raise NotFound("Unknown subject.")
    subject_id = subject_id_by_key(site=site, key=key)
    if subject_id is None:
        raise NotFound("Unknown subject.")
    return subject_feed(subject_id=subject_id)


def subject_feed(*, subject_id: int) -> FeedListing:
    """The subject's newest ``FEEDS_ITEMS`` published public comments."""
    subject = Subject.objects.select_related("site").filter(pk=subject_id).first()
    if subject is None:
        raise NotFound("Unknown subject.")
    where = rowsql.Sql("c.subject_id = %s", (subject.pk,)) & _PUBLIC
    rows = rowsql.fetch(where, order=_NEWEST_FIRST, limit=settings.FEEDS_ITEMS)
    return FeedListing(site=subject.site, subject=subject, entries=_shown(rows))


# --- recent and top ------------------------------------------------------------------------


def _position(cursor: str | None, scope: str, keys: tuple[str, ...]) -> dict | None:
    position = decode_cursor(cursor=cursor, scope=scope)
    if position is not None and not all(
        isinstance(position.get(k), int) and not isinstance(position.get(k), bool) for k in keys
    ):
        raise InvalidInput("Malformed cursor.", fields=_MALFORMED)
    return position


def recent_comments(*, site: Site, limit: int, cursor: str | None) -> Page:
    """The site's published public comments in open subjects, newest first."""
    scope = f"recent:{site.pk}"
    where = _of_site(site.pk, open_only=True)
    after = _position(cursor, scope, ("k",))
    if after is not None:
        where &= rowsql.Sql("c.id < %s", (after["k"],))
    rows = rowsql.fetch(where, order=_NEWEST_FIRST, limit=limit + 1)
    page = rows[:limit]
    next_cursor = encode_cursor(scope=scope, position={"k": page[-1].pk}) if len(rows) > limit else None
    return Page(items=_shown(page), next_cursor=next_cursor)


def top_comments(*, site: Site, days: int, limit: int, cursor: str | None) -> Page:
    """The site's most liked published public comments in open subjects among those of the last
    ``days`` days (ties newest first). The window's start rides in the cursor, so following it
    to the end lists each comment once however long that takes."""
    scope = f"top:{site.pk}:{days}"
    position = _position(cursor, scope, ("l", "k", "since"))
    since = position["since"] if position else int((timezone.now() - timedelta(days=days)).timestamp())
    where = _of_site(site.pk, open_only=True) & rowsql.Sql(
        "c.created_at >= %s", (rowsql.UNIX_EPOCH + timedelta(seconds=since),)
    )
    if position is not None:
        where &= rowsql.Sql(
            "(c.like_count < %s OR (c.like_count = %s AND c.id < %s))", (position["l"], position["l"], position["k"])
        )
    rows = rowsql.fetch(where, order=(("like_count", "desc"), ("id", "desc")), limit=limit + 1)
    page = rows[:limit]
    next_cursor = None
    if len(rows) > limit:
        next_cursor = encode_cursor(scope=scope, position={"l": page[-1].like_count, "k": page[-1].pk, "since": since})
    return Page(items=_shown(page), next_cursor=next_cursor)


def top_comments_json(*, site: Site, days: int, limit: int, cursor: str | None) -> bytes:
    """``top_comments`` as the API's JSON. A first page is kept in the shared cache for
    ``FEEDS_MAX_AGE`` seconds (as long as readers and proxies may keep it): over a busy site's
    window it sorts every comment of the window by likes (docs/benchmarks.md, "Feeds"), so it
    is read at most once a minute per site, window and size whoever asks."""
    key = f"feeds:top:{site.pk}:{days}:{limit}" if cursor is None else None
    if key is not None and (kept := cache.get(key)) is not None:
        return kept
    page = top_comments(site=site, days=days, limit=limit, cursor=cursor)
    body = encoding.dumps({"items": page.items, "next_cursor": page.next_cursor})
    if key is not None:
        cache.set(key, body, settings.FEEDS_MAX_AGE)
    return body
