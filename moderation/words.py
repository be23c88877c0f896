"""The compiled word filters of this process: one automaton for the global list and one per
site, built on first use and swapped when the list changes (``snapshots``: an edit reaches
every web process and worker within ``MODERATION_WORDS_RECHECK`` seconds).
"""

from __future__ import annotations

from .snapshots import Snapshot
from .wordfilter import EMPTY, Entry, WordFilter

VERSION_KEY = "moderation:words:version"


def _build(site_id: int | None) -> WordFilter:
    from .models import WordEntry

    rows = WordEntry.objects.filter(site_id=site_id).values_list("id", "word", "action", "inside_words")  # type: ignore[misc]  # None: the global list
    entries = [Entry(id=i, word=w, action=a, inside_words=inside) for i, w, a, inside in rows]
    return WordFilter(entries) if entries else EMPTY


_filters: Snapshot[WordFilter] = Snapshot(VERSION_KEY, _build)


def word_list_changed() -> None:
    """Tell every process that the word list changed (call after the change commits)."""
    _filters.changed()


def forget() -> None:
    """Drop this process's automatons (they are rebuilt on next use)."""
    _filters.forget()


def filters_for(site_id: int) -> tuple[WordFilter, WordFilter]:
    """The global filter and the site's, current within ``MODERATION_WORDS_RECHECK`` seconds."""
    return _filters.get(None), _filters.get(site_id)
