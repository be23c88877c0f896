"""The compiled word filters of this process: one automaton for the global list and one per
site, built on first use and swapped when the list changes.

A change bumps a version number in the shared cache (``word_list_changed``); every process
compares its version with the cache's at most once per ``MODERATION_WORDS_RECHECK`` seconds
and drops its automatons when they differ, so an edit reaches every web process and worker
within that time. If the cache lost the number (restart, eviction), a new one is set and
everyone rebuilds once.
"""

from __future__ import annotations

import threading
import time
import uuid

from django.conf import settings
from django.core.cache import cache

from .wordfilter import EMPTY, Entry, WordFilter

VERSION_KEY = "moderation:words:version"

_lock = threading.Lock()
_filters: dict[int | None, WordFilter] = {}
_version: str | None = None
_checked_at = 0.0


def word_list_changed() -> None:
    """Tell every process that the word list changed (call after the change commits)."""
    cache.set(VERSION_KEY, uuid.uuid4().hex, None)
    forget()


def forget() -> None:
    """Drop this process's automatons (they are rebuilt on next use)."""
    global _version
    with _lock:
        _filters.clear()
        _version = None


def _current_version() -> str:
    version = cache.get(VERSION_KEY)
    if version is None:
        version = uuid.uuid4().hex
        if not cache.add(VERSION_KEY, version, None):
            version = cache.get(VERSION_KEY) or version
    return version


def _fresh() -> None:
    """Drop the automatons if the list changed since they were built."""
    global _version, _checked_at
    now = time.monotonic()
    if _version is not None and now - _checked_at < settings.MODERATION_WORDS_RECHECK:
        return
    version = _current_version()
    with _lock:
        if version != _version:
            _filters.clear()
            _version = version
        _checked_at = now


def _build(site_id: int | None) -> WordFilter:
    from .models import WordEntry

    rows = WordEntry.objects.filter(site_id=site_id).values_list("id", "word", "action", "inside_words")
    entries = [Entry(id=i, word=w, action=a, inside_words=inside) for i, w, a, inside in rows]
    return WordFilter(entries) if entries else EMPTY


def filters_for(site_id: int) -> tuple[WordFilter, WordFilter]:
    """The global filter and the site's, current within ``MODERATION_WORDS_RECHECK`` seconds."""
    _fresh()
    found = []
    for key in (None, site_id):
        wf = _filters.get(key)
        if wf is None:
            wf = _build(key)
            with _lock:
                _filters[key] = wf
        found.append(wf)
    return found[0], found[1]
