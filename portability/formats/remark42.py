"""Remark42's backup file: JSON lines, gzip-compressed or not. The first line is the site's
meta record (``{"version": 1, "users": [...], "posts": [...]}``), each further line a comment.

Remark42 has no thread records: a page is its ``locator.url``, the thread's address and id (a
page that Remark42's meta marks ``read_only`` becomes a closed subject). A comment is known by
its ``id`` and answers ``pid``. ``delete`` -> deleted; everything else is published
(Remark42 has no queue). Authors are ``remark42:<user id>`` (Remark42's ids name the sign-in
provider, e.g. ``github_…``). The Markdown the author wrote (``orig``) is imported when the
backup has it, else the rendered HTML (``text``). Votes are not imported (docs/operations.md,
"Data in and out").
"""

from __future__ import annotations

from collections.abc import Iterator

from comments.models import Status

from .lines import json_lines, line_problem
from .records import (
    HTML,
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
    clean_text,
    fit_id,
    http_url,
    parse_time,
)

SEEN_THREADS = 10_000  # pages remembered to avoid a thread record per comment (a bounded set)


class Remark42Reader(Reader):
    name = "remark42"
    threads_explicit = False

    def records(self) -> Iterator[Record]:
        lines = json_lines(self.path)
        first = next(lines, None)
        if first is None or not isinstance(first[1], dict) or "version" not in first[1]:
            raise FormatError('this is not a Remark42 backup: its first line is not the meta record ({"version": ...})')
        meta = first[1]
        if meta.get("version") not in (0, 1):
            raise FormatError(f"unsupported Remark42 backup version {meta.get('version')!r}")
        read_only = {
            post.get("url") for post in meta.get("posts") or [] if isinstance(post, dict) and post.get("read_only")
        }
        seen: set[str] = set()
        for number, value in lines:
            where = f"line {number}"
            problem = line_problem(value)
            if problem:
                yield Skipped(where, problem)
                continue
            assert isinstance(value, dict)  # line_problem lets only objects through
            locator = value.get("locator")
            if not isinstance(locator, dict):
                locator = {}
            url = clean_text(locator.get("url")).strip() if isinstance(locator.get("url"), str) else ""
            if not url:
                yield Skipped(where, "no thread")
                continue
            thread_id = fit_id(url)
            if thread_id not in seen:
                if len(seen) >= SEEN_THREADS:
                    seen.clear()
                seen.add(thread_id)
                yield Thread(
                    source_id=thread_id,
                    address=url,
                    fallback=thread_id,
                    title=clean_text(value.get("title")).strip()[:300],
                    closed=url in read_only,
                )
            yield self._comment(value, where, thread_id)

    def _comment(self, value: dict, where: str, thread_id: str) -> Record:
        source_id = value.get("id")
        if not isinstance(source_id, str) or not source_id.strip():
            return Skipped(where, "comment without an id")
        source_id = fit_id(clean_text(source_id).strip())
        where = f"comment {source_id}"
        created_at = parse_time(value.get("time"))
        if created_at is None:
            return Skipped(where, "bad or missing date")
        orig, text = value.get("orig"), value.get("text")
        body, markup = (orig, MARKDOWN) if isinstance(orig, str) and orig.strip() else (text, HTML)
        body = clean_text(body if isinstance(body, str) else "").strip()
        if len(body) > MAX_BODY:
            return Skipped(where, "body too long")
        user = value.get("user")
        if not isinstance(user, dict):
            user = {}
        user_id = clean_text(user.get("id")).strip() if isinstance(user.get("id"), str) else ""
        if user_id == "deleted":
            user_id = ""  # Remark42's "hard delete" erased the author: nobody
        name = clean_text(user.get("name")).strip()[:100] if isinstance(user.get("name"), str) else ""
        picture = http_url(user["picture"]) if isinstance(user.get("picture"), str) else ""
        author = (
            Author(external_id=self.external_id(user_id), name=author_name(name, user_id), avatar=picture[:1000])
            if user_id
            else None
        )
        parent = value.get("pid")
        edit = value.get("edit")
        if not isinstance(edit, dict):
            edit = {}
        return Comment(
            source_id=source_id,
            thread_id=thread_id,
            parent_id=fit_id(clean_text(parent).strip()) if isinstance(parent, str) and parent.strip() else None,
            author=author,
            body=body,
            markup=markup,
            created_at=created_at,
            status=Status.DELETED if value.get("delete") is True else Status.PUBLISHED,
            pinned=value.get("pin") is True,
            edited_at=parse_time(edit.get("time")),
        )
