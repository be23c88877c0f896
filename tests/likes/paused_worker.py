"""A Celery worker whose like flush stops where a fault test wants to kill it:

    python -m tests.likes.paused_worker PAUSE_FILE inside|committed <celery worker arguments>

``inside``: inside the flush's transaction, once the like rows and counts are written and not
committed; ``committed``: after the commit, before the stream entries are acknowledged. There
the flush writes ``PAUSE_FILE.reached`` (with its pid) and waits while ``PAUSE_FILE`` exists,
so the test can SIGKILL the process at that point. The stops are put in from outside, by
wrapping the two calls that bound them; the application has no fault hook of its own."""

from __future__ import annotations

import functools
import os
import sys

from tests.workers import pause, run_celery


def install(pause_file: str, where: str) -> None:
    from likes import live, services

    if where == "inside":
        # The last write of the flush's transaction.
        written = services._add_like_counts

        @functools.wraps(written)
        def write_then_pause(*args, **kwargs):
            result = written(*args, **kwargs)
            pause(pause_file)
            return result

        services._add_like_counts = write_then_pause
    elif where == "committed":
        acknowledge = live.acknowledge

        @functools.wraps(acknowledge)
        def pause_then_acknowledge(*args, **kwargs):
            pause(pause_file)
            return acknowledge(*args, **kwargs)

        live.acknowledge = pause_then_acknowledge
    else:
        raise SystemExit(f"pause point {where!r}: expected inside or committed")


def main() -> None:
    pause_file, where, *celery_arguments = sys.argv[1:]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    install(pause_file, where)
    run_celery(celery_arguments)


if __name__ == "__main__":
    main()
