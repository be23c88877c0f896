"""Per-thread counts of the read caches' hits and misses: what ``bench/http.py`` reports as the
cache hit ratio of each scenario (a middleware of the benchmark's settings reads them before and
after each request). A plain thread-local, so counting costs an attribute increment."""

from __future__ import annotations

import threading


class _Counts(threading.local):
    hits = 0
    misses = 0


counts = _Counts()


def hit() -> None:
    counts.hits += 1


def miss() -> None:
    counts.misses += 1
