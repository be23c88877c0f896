"""Moving the clock one module of the service reads, instead of sleeping until time has passed.

A module that reads the time as ``time.monotonic()`` or ``time.time()`` (after ``import time``)
sees, once ``shifted_clock`` has run, a stand-in for the ``time`` module whose clocks run
``offset`` seconds ahead of the real ones: the test moves them with ``advance`` (a TTL, a retry
window, a sanction's end) and every other module, Django's and the test's own included, keeps the
real time. ``monkeypatch`` puts the module's ``time`` back after the test.
"""

from __future__ import annotations

import time
from types import ModuleType

import pytest


class ShiftedTime:
    """The ``time`` module as one module sees it: ``monotonic`` and ``time`` (and their
    nanosecond forms) ``offset`` seconds ahead; everything else the real module's."""

    def __init__(self) -> None:
        self.offset = 0.0

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def monotonic_ns(self) -> int:
        return time.monotonic_ns() + int(self.offset * 1e9)

    def time(self) -> float:
        return time.time() + self.offset

    def time_ns(self) -> int:
        return time.time_ns() + int(self.offset * 1e9)

    def __getattr__(self, name: str):
        return getattr(time, name)


def shifted_clock(monkeypatch: pytest.MonkeyPatch, *modules: ModuleType) -> ShiftedTime:
    """One clock for ``modules`` (each must read the time through its ``time`` name), returned
    to be advanced."""
    clock = ShiftedTime()
    for module in modules:
        assert getattr(module, "time", None) is time, f"{module.__name__} does not read the clock as time.*()"
        monkeypatch.setattr(module, "time", clock)
    return clock
