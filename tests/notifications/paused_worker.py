"""A Celery worker whose notifications work stops where a fault test wants to kill it:

    python -m tests.notifications.paused_worker PAUSE_FILE POINT <celery worker arguments>

``fanout:N``: after the N-th comment's notifications are committed, before the batch of events
is acknowledged. ``send:N``: after the N-th email is sent and marked sent, with the rest of
its batch still claimed. There the worker writes ``PAUSE_FILE.reached`` (with its pid) and waits
while ``PAUSE_FILE`` exists, so the test can SIGKILL it at that point. The stop is put in from
outside, by wrapping the call that bounds it; the application has no fault hook of its own."""

from __future__ import annotations

import functools
import os
import sys

from tests.workers import pause, run_celery


def _pause_after_calls(module, name: str, calls: int, pause_file: str) -> None:
    """Wrap ``module.name`` so that its ``calls``-th call pauses once it has returned."""
    wrapped = getattr(module, name)
    made = [0]

    @functools.wraps(wrapped)
    def call_then_pause(*args, **kwargs):
        result = wrapped(*args, **kwargs)
        made[0] += 1
        if made[0] == calls:
            pause(pause_file)
        return result

    setattr(module, name, call_then_pause)


def _pause_after_sent(calls: int, pause_file: str) -> None:
    """Wrap ``mail._mark`` so that its ``calls``-th marking of a sent email pauses once done."""
    from notifications import mail
    from notifications.models import EmailState

    wrapped = mail._mark
    made = [0]

    @functools.wraps(wrapped)
    def mark_then_pause(ids, until, state):
        result = wrapped(ids, until, state)
        if state == EmailState.SENT:
            made[0] += 1
            if made[0] == calls:
                pause(pause_file)
        return result

    mail._mark = mark_then_pause


def install(pause_file: str, point: str) -> None:
    from notifications import fanout

    where, _, calls = point.partition(":")
    if where == "fanout":
        _pause_after_calls(fanout, "comment_notify", int(calls), pause_file)
    elif where == "send":
        _pause_after_sent(int(calls), pause_file)
    else:
        raise SystemExit(f"pause point {point!r}: expected fanout:N or send:N")


def main() -> None:
    pause_file, point, *celery_arguments = sys.argv[1:]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    install(pause_file, point)
    run_celery(celery_arguments)


if __name__ == "__main__":
    main()
