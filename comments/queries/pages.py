"""Pages through the shared cache (``pagecache``): the JSON of a list as an anonymous reader
gets it, shared, with a signed-in reader's likes laid over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from infra import encoding, pagecache

from .. import hooks
from ..models import GONE_STATUSES
from . import modes, present
from .cursors import Page
from .single import subject_for_viewer
from .visibility import Viewer, authenticated

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

    from ..models import User


def _page_json(page: Page) -> bytes:
    return encoding.dumps({"items": page.items, "next_cursor": page.next_cursor})


_NEXT_CURSOR = b',"next_cursor":'


def _next_cursor(entry: bytes) -> str | None:
    """The ``next_cursor`` of a page's JSON, the last member ``_page_json`` writes: read from
    the tail rather than by decoding the whole page."""
    at = entry.rfind(_NEXT_CURSOR)
    return None if at < 0 else encoding.loads(entry[at + len(_NEXT_CURSOR) : -1])


def _variant(options: dict[str, Any]) -> str:
    """What shapes a page of a subject besides the subject: its key in the page cache."""
    mode, sort, cursor = (options[name] or "" for name in ("mode", "sort", "cursor"))
    return f"api:{mode}:{sort}:{options['limit']}:{options['replies']}:{cursor}"


def _public_page(subject_id: int, options: dict[str, Any]) -> bytes:
    subject, viewer = subject_for_viewer(subject_id=subject_id, user=None)
    return _page_json(modes.list_comments(subject=subject, viewer=viewer, **options))


def hot_list_page(*, subject_id: int, query_string: str) -> bytes | None:
    """An anonymous reader's page of a hot subject from this process's memory, found by the
    request's raw query string, before the query is validated (it was, when the copy was kept
    by ``list_comments_json``); None otherwise. Only for a reader the caller knows to be
    anonymous."""
    return pagecache.hot_request_copy(subject_id, query_string)


def list_comments_json(
    *,
    subject_id: int,
    user: User | AnonymousUser | None,
    mode: str | None,
    sort: str | None,
    limit: int,
    cursor: str | None,
    replies: int,
    query_string: str = "",
) -> pagecache.Read:
    """``list_comments`` of the subject for ``user`` as the API's JSON bytes (``.entry`` of the
    answer; ``.stale`` when the database could not rebuild it), through the shared page cache:
    an anonymous reader gets the shared page as it is (and a hot one is kept under the request's
    ``query_string`` for ``hot_list_page``); a signed-in reader who sees what the public sees
    gets it with their ``liked`` flags and live like counts laid over it; moderators, and
    readers who see pending, shadow or friends-only comments of the subject (their authors and
    the authors' mutual followers), get a page of their own from the database."""
    user = authenticated(user)
    options: dict[str, Any] = {"mode": mode, "sort": sort, "limit": limit, "cursor": cursor, "replies": replies}
    if not pagecache.enabled():
        subject, viewer = subject_for_viewer(subject_id=subject_id, user=user)
        return pagecache.Read(_page_json(modes.list_comments(subject=subject, viewer=viewer, **options)), False)
    variant = _variant(options)
    if user is None:
        read = pagecache.shared_entry(subject_id, variant, lambda: _public_page(subject_id, options), stale_ok=True)
        if not read.stale:
            pagecache.keep_request_copy(subject_id, query_string, read.entry)
            if cursor and not read.cached:
                # A reader walking the list, served a page built here: the pages after it are
                # built ahead (one served from those goes on with the same walk).
                pagecache.preloads.offer(subject_id, read.entry, _following(subject_id, options))
        return read
    subject, viewer = subject_for_viewer(subject_id=subject_id, user=user)
    if viewer.is_moderator or viewer.sees_private:
        return pagecache.Read(_page_json(modes.list_comments(subject=subject, viewer=viewer, **options)), False)
    own = []

    def public_from_own() -> bytes:
        # This viewer's page is the public one but for their "liked" flags (counts are the
        # same for everyone), so one read of the database makes both.
        page = modes.list_comments(subject=subject, viewer=viewer, **options)
        own.append(_page_json(page))
        for c in _each_comment(page.items):
            c["liked"] = False
        return _page_json(page)

    read = pagecache.shared_entry(subject_id, variant, public_from_own, stale_ok=False, fresh=True)
    if not read.cached:
        return pagecache.Read(own[0], False)
    return pagecache.Read(_with_viewer_likes(read.entry, subject_id, viewer), True)


def _following(subject_id: int, options: dict[str, Any]) -> pagecache.Follow:
    """For ``pagecache.Preloads``: the variant of the page after a page of this list, and its
    build."""

    def follow(entry: bytes) -> tuple[str, Callable[[], bytes]] | None:
        next_cursor = _next_cursor(entry)
        if next_cursor is None:
            return None
        following = dict(options, cursor=next_cursor)
        return _variant(following), lambda: _public_page(subject_id, following)

    return follow


def _each_comment(items: list[dict]) -> Iterator[dict]:
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
    # The viewer's likes the live store does not know, from the database.
    readable = {c["id"] for c in shown if live.get(c["id"], (0, None))[1] is None and c["status"] not in GONE_STATUSES}
    liked = present.liked_ids(
        comment_ids=readable, subject_ids={subject_id}, liked_expression=hooks.liked_sql(viewer.user_id, {subject_id})
    )
    for c in shown:
        count, known = live.get(c["id"], (c["like_count"], None))
        c["like_count"], c["liked"] = count, c["id"] in liked if known is None else known
    return encoding.dumps(page)
