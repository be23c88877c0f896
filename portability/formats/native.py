"""This service's own export (``export_comments --format json``; docs/API.md, "Site export"):
JSON lines, a header, then each subject followed by its comments, parents first. Read back,
it rebuilds the site: subjects by their key, comments with their tree, statuses, flags,
times, bodies (Markdown) and authors (by their external id, which the export writes)."""

from __future__ import annotations

from collections.abc import Iterator

from comments.models import Mode, Status, SubjectState, Visibility

from .lines import json_lines, line_problem
from .records import (
    MARKDOWN,
    MAX_BODY,
    Author,
    Comment,
    FormatError,
    Reader,
    Record,
    Skipped,
    Thread,
    author_name,
    clean_ip,
    clean_text,
    fit_id,
    http_url,
    parse_time,
)

FORMAT_NAME = "comments-jsonl"
VERSION = 1


def _text(value, limit: int) -> str:
    return clean_text(value).strip()[:limit] if isinstance(value, str) else ""


def _id(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return ""
    return fit_id(clean_text(str(value)).strip())


class NativeReader(Reader):
    name = "json"

    def records(self) -> Iterator[Record]:
        lines = json_lines(self.path)
        first = next(lines, None)
        header = first[1] if first else None
        if not isinstance(header, dict) or header.get("type") != "export" or header.get("format") != FORMAT_NAME:
            raise FormatError(f"this is not this service's export: its first line is not the {FORMAT_NAME} header")
        if header.get("version") != VERSION:
            raise FormatError(f"unsupported export version {header.get('version')!r} (this service reads {VERSION})")
        for number, value in lines:
            where = f"line {number}"
            problem = line_problem(value)
            if problem:
                yield Skipped(where, problem)
                continue
            assert isinstance(value, dict)  # line_problem lets only objects through
            if value.get("type") == "subject":
                yield self._subject(value, where)
            elif value.get("type") == "comment":
                yield self._comment(value, where)
            else:
                yield Skipped(where, "unknown record type")

    def _subject(self, value: dict, where: str) -> Record:
        source_id, key = _id(value.get("id")), _text(value.get("key"), 256)
        if not source_id or not key or len(key) > 255:
            return Skipped(where, "subject without an id or a key")
        mode = value["mode"] if value.get("mode") in Mode.values else ""
        return Thread(
            source_id=source_id,
            identifier=key,
            address=http_url(value.get("url") or ""),
            fallback=key,
            title=_text(value.get("title"), 300),
            closed=value.get("state") == SubjectState.CLOSED,
            mode=mode,
            created_at=parse_time(value.get("created_at")),
        )

    def _comment(self, value: dict, where: str) -> Record:
        source_id, thread_id = _id(value.get("id")), _id(value.get("subject_id"))
        if not source_id:
            return Skipped(where, "comment without an id")
        where = f"comment {source_id}"
        if not thread_id:
            return Skipped(where, "no thread")
        created_at = parse_time(value.get("created_at"))
        if created_at is None:
            return Skipped(where, "bad or missing date")
        status, visibility = value.get("status"), value.get("visibility", Visibility.PUBLIC)
        if status not in Status.values or visibility not in Visibility.values:
            return Skipped(where, "unknown status")
        body = value.get("body")
        if not isinstance(body, str):
            return Skipped(where, "no body")
        if len(body) > MAX_BODY:
            return Skipped(where, "body too long")
        author = value.get("author")
        if isinstance(author, dict) and _id(author.get("id")):
            author = Author(
                external_id=_id(author.get("id")),
                name=author_name(_text(author.get("name"), 1000)),
                email=_text(author.get("email"), 254),
                avatar=http_url(author.get("avatar") or "")[:1000],
            )
        else:
            author = None
        parent = _id(value.get("reply_to_id"))
        return Comment(
            source_id=source_id,
            thread_id=thread_id,
            parent_id=parent or None,
            author=author,
            body=clean_text(body).strip(),
            markup=MARKDOWN,
            created_at=created_at,
            status=status,
            visibility=visibility,
            pinned=value.get("pinned") is True,
            featured=value.get("featured") is True,
            edited_at=parse_time(value.get("edited_at")),
            ip=clean_ip(value.get("ip")),
            user_agent=_text(value.get("user_agent"), 512),
        )
