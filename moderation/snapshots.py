"""What a process keeps in memory of lists that change rarely but are read on every request
(the compiled word lists, the sanctions of a site), and how it learns that they changed.

A change bumps a version number in the shared cache (``Snapshot.changed``, called after the
change commits); every process compares its version with the cache's at most once per
``MODERATION_WORDS_RECHECK`` seconds and drops what it keeps when they differ, so a change
reaches every web process and worker within that time, and the process that made it at once.
If the cache lost the number (restart, eviction), a new one is set and everyone rebuilds once;
while the cache is down, each process keeps what it has.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.cache import cache

from infra import replicas, sharedcache

Value = TypeVar("Value")

_all: list[Snapshot] = []


class Snapshot(Generic[Value]):
    """Values built per scope (a site id, or None for what is global) by ``build``, kept until
    the version under ``version_key`` changes."""

    def __init__(self, version_key: str, build: Callable[[Any], Value]):
        self.version_key = version_key
        self.build = build
        self._lock = threading.Lock()
        self._values: dict[Hashable, Value] = {}
        self._version: str | None = None
        self._checked_at = 0.0
        _all.append(self)

    def changed(self) -> None:
        """Tell every process that the source changed (call after the change commits)."""
        sharedcache.call(lambda: cache.set(self.version_key, uuid.uuid4().hex, None), None)
        self.forget()

    def forget(self) -> None:
        """Drop what this process keeps (it is built again on next use)."""
        with self._lock:
            self._values.clear()
            self._version = None

    def get(self, scope: Hashable) -> Value:
        """The value of ``scope``, current within ``MODERATION_WORDS_RECHECK`` seconds."""
        self._fresh()
        value = self._values.get(scope)
        if value is None:
            # Kept until the next change: built with every write made before (a replica that
            # has replayed them, else the primary), or a list just changed would stay old here.
            with replicas.current_reads():
                value = self.build(scope)
            with self._lock:
                self._values[scope] = value
        return value

    def _current_version(self) -> str | None:
        """The shared version; None while the cache is down (the process keeps what it has)."""

        def read() -> str:
            version = cache.get(self.version_key)
            if version is None:
                version = uuid.uuid4().hex
                if not cache.add(self.version_key, version, None):
                    version = cache.get(self.version_key) or version
            return version

        return sharedcache.call(read, None)

    def _fresh(self) -> None:
        now = time.monotonic()
        if self._version is not None and now - self._checked_at < settings.MODERATION_WORDS_RECHECK:
            return
        version = self._current_version()
        with self._lock:
            if version is not None and version != self._version:
                self._values.clear()
                self._version = version
            self._checked_at = now


def forget_all() -> None:
    """Drop every snapshot of this process (tests start from nothing)."""
    for snapshot in _all:
        snapshot.forget()
