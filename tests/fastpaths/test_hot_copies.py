"""Hot copies of hot pages in the process (``COMMENTS_HOT_PAGE_SECONDS``; 0 turns them off): the
scenario's answers are the shared cache's (docs/fast-paths.md).

Guarantee: a write drops this process's copies of its subject at once, so its writer (and every
reader of this process) reads it next; another process's copy lives out its
``COMMENTS_HOT_PAGE_SECONDS`` (one second by default) before the write reaches it there."""

from __future__ import annotations

import pytest

from infra import pagecache

from .scenario import Differential, make_world, read_everything

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hot_at_once(settings):
    """Every page hot from its first read (so every read after it comes from a copy), kept a
    minute (so no copy expires during the test); the page cache on, no pages built ahead."""
    settings.COMMENTS_PAGE_CACHE_TTL = 300
    settings.COMMENTS_PAGE_PRELOAD = False
    settings.COMMENTS_HOT_PAGE_READS = 1
    settings.COMMENTS_HOT_PAGE_SECONDS = 60


def served_from_copies(monkeypatch) -> list[int]:
    """Counts the reads answered by a hot copy."""
    served: list[int] = []
    original = pagecache.hot.get

    def get(key, **kwargs):
        copy = original(key, **kwargs)
        if copy is not None:
            served.append(1)
        return copy

    monkeypatch.setattr(pagecache.hot, "get", get)
    return served


def hot_copies(settings, world) -> Differential:
    def switch(on: bool) -> None:
        settings.COMMENTS_HOT_PAGE_SECONDS = 60 if on else 0

    return Differential(switch, lambda: read_everything(world))


def test_hot_copies_answer_as_the_shared_cache_does(settings, hot_at_once, monkeypatch):
    served = served_from_copies(monkeypatch)
    world = make_world()
    hot_copies(settings, world).run(world)
    assert len(served) > 100, "hot copies served (almost) nothing: the test compared nothing"


def test_the_comparison_catches_a_hot_copy_that_outlives_a_write(settings, hot_at_once, monkeypatch):
    # The deliberate break: a write no longer drops this process's copies of its subject.
    monkeypatch.setattr(pagecache.hot, "forget_subjects", lambda subject_ids: None)
    world = make_world()
    with pytest.raises(AssertionError, match="after 'post'"):
        hot_copies(settings, world).run(world)
