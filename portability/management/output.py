"""Where the export commands write: a file, or standard output."""

import sys
from contextlib import contextmanager

from django.core.management.base import CommandError


@contextmanager
def binary_output(path: str):
    """A binary stream to ``path`` (``-``: standard output), closed or flushed at the end."""
    if path == "-":
        try:
            yield sys.stdout.buffer
        finally:
            sys.stdout.buffer.flush()
        return
    try:
        out = open(path, "wb")  # noqa: SIM115 - closed by the `with out:` below
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    with out:
        yield out
