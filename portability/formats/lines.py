"""JSON lines, read one bounded line at a time (for Remark42's backup and this service's export)."""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from .records import FormatError, open_binary

# A line longer than this is reported and skipped without being held whole: no record of a
# comment comes near it (bodies are capped far below).
MAX_LINE = 4 * 1024 * 1024


class TooLong:
    """Stands for a line that was longer than ``MAX_LINE``."""


class NotJson:
    """Stands for a line that is not JSON."""


def json_lines(path: str) -> Iterator[tuple[int, object]]:
    """``(line number, parsed value)`` of each non-blank line; the value is ``TooLong`` or
    ``NotJson`` for a line that cannot be read."""
    stream = open_binary(path)
    try:
        number = 0
        while True:
            line = stream.readline(MAX_LINE)
            if not line:
                return
            number += 1
            if len(line) >= MAX_LINE and not line.endswith(b"\n"):
                while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass
                yield number, TooLong
                continue
            if not line.strip():
                continue
            try:
                yield number, orjson.loads(line)
            except orjson.JSONDecodeError:
                yield number, NotJson
    except (OSError, EOFError) as exc:  # a truncated or corrupt .gz
        raise FormatError(f"cannot read the file: {exc}") from None
    finally:
        stream.close()


def line_problem(value) -> str | None:
    if value is TooLong:
        return "line too long"
    if value is NotJson:
        return "not valid JSON"
    if not isinstance(value, dict):
        return "not a JSON object"
    return None
