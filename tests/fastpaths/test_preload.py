"""Pages built ahead of a reader who follows cursors (``COMMENTS_PAGE_PRELOAD``; off: each page
is built when asked for): the walks' answers are the same with it on and off
(docs/fast-paths.md).

Guarantee: a page built ahead is built under the subject's version token read before its rows
and kept only under it, so a write made after it was built (and before the reader asks for it)
leaves it unused: the reader gets the page with the write.

Only anonymous readers who follow a cursor are built ahead for; the scenario walks every list
of the subject, and writes while a walk's next pages are built ahead and not yet taken."""

from __future__ import annotations

import time

import pytest

from comments.models import Comment, Status
from infra import encoding, pagecache

from .scenario import API, SORTS, assert_same, bearer, make_world, pages, writes

pytestmark = pytest.mark.django_db(transaction=True)


def builds_ahead_done() -> None:
    """Wait for this process's builds ahead (their result, not their timing, is tested)."""
    for future, _ in list(pagecache.preloads._builds.values()):
        future.result(timeout=10)


@pytest.fixture
def preloading(settings):
    settings.COMMENTS_PAGE_CACHE_TTL = 300
    settings.COMMENTS_HOT_PAGE_SECONDS = 0
    settings.COMMENTS_PAGE_PRELOAD = True
    yield
    pagecache.preloads.stop()  # no build outlives the test's rows, nor its connection the test


def taken_ahead(monkeypatch) -> list[int]:
    """Counts the pages a reader got from those built ahead."""
    taken: list[int] = []
    original = pagecache.preloads.take

    def take(key, token):
        built = original(key, token)
        if built is not None:
            taken.append(1)
        return built

    monkeypatch.setattr(pagecache.preloads, "take", take)
    return taken


def edit_a_page_built_ahead(world) -> None:
    """Its author edits the first comment of a page this process has built ahead, not yet taken."""
    built = [future.result(timeout=10) for future, _ in pagecache.preloads._builds.values()]
    items = [item for found in built if found is not None for item in encoding.loads(found[1])["items"]]
    assert items, "no page was built ahead"
    # One its author may still edit: a write midway may have deleted a comment of such a page.
    ids = [item["id"] for item in items]
    published = set(Comment.objects.filter(pk__in=ids, status=Status.PUBLISHED).values_list("pk", flat=True))
    first = next((pk for pk in ids if pk in published), None)
    assert first is not None, "no published comment on the pages built ahead"
    comment = Comment.objects.get(pk=first)
    response = bearer(comment.author).patch(
        f"{API}/comments/{comment.pk}", {"body": f"edited while built ahead ({time.monotonic()})"}, format="json"
    )
    assert response.status_code == 200, response.content


def walks_with_a_write_midway(settings, world, write) -> None:
    """Each list walked with the path on, two pages first (the next ones are built ahead), then
    ``write`` (once, in the first list) and an edit of a comment on a page built ahead, then the
    rest; the same rest walked again from the same cursor with the path off; the two must be the
    same."""
    reader = world.clients["anonymous"]
    for mode, sorts in SORTS.items():
        for sort in sorts:
            settings.COMMENTS_PAGE_PRELOAD = True
            walk = pages(reader, world.subject, mode=mode, sort=sort, limit=1)
            head = []
            for answer in walk:
                head.append(answer)
                builds_ahead_done()
                if len(head) == 2:
                    break
            cursor = head[-1][2]
            assert cursor, "a list of two pages: nothing is built ahead of its reader"
            if write is not None:
                write()
                write = None
            edit_a_page_built_ahead(world)
            on = [(status, body) for status, body, _ in walk]
            builds_ahead_done()
            settings.COMMENTS_PAGE_PRELOAD = False
            off = [
                (status, body)
                for status, body, _ in pages(reader, world.subject, mode=mode, sort=sort, cursor=cursor, limit=1)
            ]
            assert_same(on, off, f"{mode}/{sort} walked on from page 3")


def the_scenario(settings, world) -> None:
    """Every list walked before any write, then again with each write made midway."""
    walks_with_a_write_midway(settings, world, None)
    for _, write in writes(world):
        walks_with_a_write_midway(settings, world, write)


def test_pages_built_ahead_answer_as_pages_built_when_asked_for(settings, preloading, monkeypatch):
    taken = taken_ahead(monkeypatch)
    world = make_world()
    the_scenario(settings, world)
    assert len(taken) > 10, "pages built ahead were (almost) never served: the test compared nothing"


def test_the_comparison_catches_a_page_built_ahead_served_after_a_write(settings, preloading, monkeypatch):
    # The deliberate break: a page built ahead is served whatever the subject's token says now.
    original = pagecache.Preloads.take
    monkeypatch.setattr(
        pagecache.Preloads, "take", lambda self, key, token: original(self, key, _built_token(self, key))
    )
    world = make_world()
    with pytest.raises(AssertionError, match="walked on from page 3"):
        the_scenario(settings, world)


def _built_token(preloads, key):
    """The token the page ``key`` was built under (waiting for its build)."""
    held = preloads._builds.get(key)
    if held is None:
        return None
    built = held[0].result(timeout=10)
    return None if built is None else built[0]
