"""Readers of other comment systems' exports (and of this service's own). Each turns a file
into a stream of records, one at a time, in bounded memory: ``Thread`` (what becomes a
subject), ``Comment``, and ``Skipped`` for an entry that cannot be imported (why, and where in
the file). A file that cannot be read at all raises ``FormatError`` with a message for a person.

Readers only read: they know each format's fields and its statuses, and map them to this
service's terms. Everything about the database is ``portability.services``'s business.
"""

from __future__ import annotations

from . import disqus, isso, native, remark42, wordpress
from .records import (
    HTML,
    HTML_LINES,
    MARKDOWN,
    MAX_BODY,
    SOURCE_ID_LENGTH,
    Author,
    Comment,
    FormatError,
    Reader,
    Skipped,
    Thread,
    author_name,
    clean_ip,
    clean_text,
    fit_id,
    http_url,
    open_binary,
    parse_time,
)

__all__ = [
    "HTML",
    "HTML_LINES",
    "MARKDOWN",
    "MAX_BODY",
    "SOURCE_ID_LENGTH",
    "Author",
    "Comment",
    "FormatError",
    "Reader",
    "Skipped",
    "Thread",
    "author_name",
    "clean_ip",
    "clean_text",
    "fit_id",
    "http_url",
    "open_binary",
    "parse_time",
    "reader_for",
]


def reader_for(format_name: str, path: str) -> Reader:
    readers = {
        "disqus": disqus.DisqusReader,
        "wordpress": wordpress.WordPressReader,
        "isso": isso.IssoReader,
        "remark42": remark42.Remark42Reader,
        "json": native.NativeReader,
    }
    if format_name not in readers:
        raise FormatError(f"unknown format {format_name!r}: use one of {', '.join(sorted(readers))}")
    return readers[format_name](path)
