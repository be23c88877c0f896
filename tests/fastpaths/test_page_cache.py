"""The shared page cache (``COMMENTS_PAGE_CACHE_TTL``; 0 turns it off): the scenario's answers
with it on are the database's (docs/fast-paths.md).

Guarantee: a page never holds rows older than its subject's version token, and every write that
changes what readers see drops the token, so a read after a write (by anyone) sees the write."""

from __future__ import annotations

import pytest

from infra import cachestats, pagecache

from .scenario import Differential, World, make_world, read_everything

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def only_the_page_cache(settings):
    """The page cache alone: no hot copies, no pages built ahead."""
    settings.COMMENTS_HOT_PAGE_SECONDS = 0
    settings.COMMENTS_PAGE_PRELOAD = False


def page_cache(settings) -> tuple[Differential, World]:
    world = make_world()

    def switch(on: bool) -> None:
        settings.COMMENTS_PAGE_CACHE_TTL = 300 if on else 0

    return Differential(switch, lambda: read_everything(world)), world


def test_the_page_cache_answers_as_the_database_does(settings, only_the_page_cache):
    diff, world = page_cache(settings)
    hits = cachestats.counts.hits
    diff.run(world)
    assert cachestats.counts.hits > hits, "the reads with the cache on never hit it: the test compared nothing"


def test_the_comparison_catches_a_page_cache_that_misses_a_write(settings, only_the_page_cache, monkeypatch):
    # The deliberate break: a write no longer drops its subject's version token.
    monkeypatch.setattr(pagecache, "subjects_changed", lambda subject_ids: None)
    diff, world = page_cache(settings)
    with pytest.raises(AssertionError, match="after 'post'"):
        diff.run(world)
