"""Isso's SQLite database file (tables ``threads`` and ``comments``), opened read-only.

A thread is known by its id; its ``uri`` is the page's path (what Isso's client sends by
default) or the ``data-isso-id`` a page set. A comment is known by its
id and answers ``parent``. ``mode``: 1 -> published, 2 -> pending (Isso's moderation queue),
4 -> deleted (Isso keeps deleted comments with replies, with their text emptied). Isso has no
accounts: every author is a guest, known by e-mail, else by name. Texts are Markdown.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import quote

from comments.models import Status

from .records import (
    MARKDOWN,
    MAX_BODY,
    Comment,
    FormatError,
    Reader,
    Record,
    Skipped,
    Thread,
    clean_ip,
    clean_text,
)

MODES = {1: Status.PUBLISHED, 2: Status.PENDING, 4: Status.DELETED}
COMMENT_COLUMNS = ("id", "tid", "parent", "created", "modified", "mode", "remote_addr", "text", "author", "email")


def _time(value) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), tz=UTC) if value is not None else None
    except (TypeError, ValueError, OverflowError, OSError):
        return None


class IssoReader(Reader):
    name = "isso"

    def records(self) -> Iterator[Record]:
        try:
            db = sqlite3.connect(f"file:{quote(self.path)}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise FormatError(f"cannot open the Isso database: {exc}") from None
        try:
            yield from self._read(db)
        except sqlite3.DatabaseError as exc:
            raise FormatError(f"this is not a readable Isso database: {exc}") from None
        finally:
            db.close()

    def _read(self, db: sqlite3.Connection) -> Iterator[Record]:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"threads", "comments"} <= tables:
            raise FormatError("this is not an Isso database: it has no threads and comments tables")
        columns = {row[1] for row in db.execute("PRAGMA table_info(comments)")}
        missing = [c for c in COMMENT_COLUMNS if c not in columns]
        if missing:
            raise FormatError(f"this is not an Isso database: its comments table has no {', '.join(missing)}")
        for thread_id, uri, title in db.execute("SELECT id, uri, title FROM threads ORDER BY id"):
            uri = clean_text(uri).strip()
            # Isso's uri is the page's path (its client's default), or the data-isso-id a page set.
            is_address = uri.startswith(("/", "http://", "https://"))
            yield Thread(
                source_id=str(thread_id),
                identifier="" if is_address else uri,
                address=uri if is_address else "",
                fallback=f"isso:{thread_id}",
                title=clean_text(title).strip()[:300],
            )
        rows = db.execute(f"SELECT {', '.join(COMMENT_COLUMNS)} FROM comments ORDER BY id")
        for comment_id, thread_id, parent, created, modified, mode, remote_addr, text, author, email in rows:
            where = f"comment {comment_id}"
            if comment_id is None or thread_id is None:
                yield Skipped(where, "no thread")
                continue
            created_at = _time(created)
            status = MODES.get(mode)
            body = clean_text(text).strip()
            if created_at is None:
                yield Skipped(where, "bad or missing date")
            elif status is None:
                yield Skipped(where, "unknown status")
            elif len(body) > MAX_BODY:
                yield Skipped(where, "body too long")
            else:
                yield Comment(
                    source_id=str(comment_id),
                    thread_id=str(thread_id),
                    parent_id=str(parent) if parent else None,
                    author=self.guest(clean_text(author)[:100], clean_text(email)[:254]),
                    body=body,
                    markup=MARKDOWN,
                    created_at=created_at,
                    status=status,
                    edited_at=_time(modified),
                    ip=clean_ip(remote_addr),
                )
