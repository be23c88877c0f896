"""The cursor engine: signed, scoped cursors, and the pagination shapes every list uses
(keyset on one unique column, and a frozen head of pinned or hottest items followed by a
tail in id order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

from django.core import signing
from django.db.models import QuerySet

from .. import rowsql
from ..exceptions import InvalidInput
from ..rowsql import CommentRow, Sql

_CURSOR_SALT = "comments.cursor"

# The readers of rows ``head_then_tail`` is given (its docstring says what each returns).
HeadRows = Callable[[list[int]], list[CommentRow]]
TailRows = Callable[[list[int], int | None, int], list[CommentRow]]
FirstPageRows = Callable[[int], tuple[list[CommentRow], list[CommentRow], bool]]


def encode_cursor(*, scope: str, position: dict) -> str:
    return signing.dumps({"s": scope, "p": position}, salt=_CURSOR_SALT, compress=True)


def decode_cursor(*, cursor: str | None, scope: str) -> dict | None:
    """The position stored in ``cursor``; ``InvalidInput`` when it is malformed, tampered with
    or was made for another list."""
    if cursor is None:
        return None
    try:
        data = signing.loads(cursor, salt=_CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError, UnicodeError):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]}) from None
    if not isinstance(data, dict) or data.get("s") != scope or not isinstance(data.get("p"), dict):
        raise InvalidInput(
            "This cursor belongs to another list.", fields={"cursor": ["Cursor does not match this list."]}
        )
    return data["p"]


@dataclass
class Page:
    items: list[Any]  # presented dicts (page_by_id's: the rows, which its caller presents)
    next_cursor: str | None


def _int_list(value: object, name: str = "cursor") -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise InvalidInput("Malformed cursor.", fields={name: ["Malformed cursor."]})
    return value


def head_then_tail(
    *,
    scope: str,
    cursor: str | None,
    limit: int,
    first_page_rows: FirstPageRows,
    head_rows: HeadRows,
    tail_rows: TailRows,
) -> tuple[list[CommentRow], str | None]:
    """Pagination of a list that starts with a small fixed *head* (pinned and/or hottest items,
    chosen when page 1 is read and carried in the cursor) and continues with a *tail* in id
    order that excludes the head. Because the head is frozen in the cursor, items whose score
    changes between pages are neither repeated nor skipped.

    ``first_page_rows(limit)`` -> (head rows, tail rows read on page 1, whether those are the
    whole tail)
    ``head_rows(ids)`` -> visible rows among ids; ``tail_rows(exclude_ids, after_id, n)``.
    """
    position = decode_cursor(cursor=cursor, scope=scope)
    if position is None:
        head, tail, tail_done = first_page_rows(limit)
        head_ids = [c.pk for c in head]
        page = head[:limit]
        offset = len(page)
        if offset < len(head):
            # "e": the list has no tail, so the last head page ends it.
            return page, encode_cursor(
                scope=scope, position={"h": head_ids, "o": offset, "k": None, "e": tail_done and not tail}
            )
        tail_page = tail[: limit - len(page)]
        page += tail_page
        if tail_done and len(tail) == len(tail_page):
            return page, None
        last = tail_page[-1].pk if tail_page else None
        return page, encode_cursor(scope=scope, position={"h": head_ids, "o": offset, "k": last})
    head_ids = _int_list(position.get("h"))
    stored_offset = position.get("o")
    after = position.get("k")
    if not isinstance(stored_offset, int) or stored_offset < 0 or not (after is None or isinstance(after, int)):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
    offset = stored_offset
    page = []
    if offset < len(head_ids):
        wanted = head_ids[offset : offset + limit]
        found = {c.pk: c for c in head_rows(wanted)}
        page = [found[i] for i in wanted if i in found]
        offset += len(wanted)
        if offset < len(head_ids):
            return page, encode_cursor(
                scope=scope, position={"h": head_ids, "o": offset, "k": None, "e": position.get("e") is True}
            )
        if position.get("e") is True:
            return page, None
    room = limit - len(page)
    if room <= 0:
        return page, encode_cursor(scope=scope, position={"h": head_ids, "o": offset, "k": after})
    tail = list(tail_rows(head_ids, after, room + 1))
    page += tail[:room]
    if len(tail) <= room:
        return page, None
    return page, encode_cursor(scope=scope, position={"h": head_ids, "o": offset, "k": tail[room - 1].pk})


def tail_after_head(
    *, head: list[CommentRow], rows_read: list[CommentRow], head_query_limit: int, n: int, tail_rows: TailRows
) -> tuple[list[CommentRow], bool]:
    """Page 1's share of the tail: ``(tail rows, whether that is all of it)``. The head query
    read ``rows_read`` with ``head_query_limit``; if it came back short and all in the head, the
    list has no tail. Otherwise the tail is read only when the head leaves room on the page."""
    if len(rows_read) < head_query_limit and len(head) == len(rows_read):
        return [], True
    room = n - len(head)
    if room <= 0:
        return [], False
    extra = list(tail_rows([c.pk for c in head], None, room + 1))
    return extra, len(extra) <= room


def keyset(
    *, where: Sql, order: str, key: str, after: int | str | None, limit: int, scope: str
) -> tuple[list[CommentRow], str | None]:
    """Plain keyset pagination of the rows matching ``where`` on one unique column."""
    if after is not None:
        where = where & Sql(f"{rowsql.comment_column(key)} {'>' if order == 'asc' else '<'} %s", (after,))
    found = rowsql.fetch(where, order=((key, order),), limit=limit + 1)
    page = found[:limit]
    next_cursor = None
    if len(found) > limit:
        next_cursor = encode_cursor(scope=scope, position={"k": page[-1].path if key == "path" else page[-1].pk})
    return page, next_cursor


def excluding(*, where: Sql, exclude: list[int], after: int | None, order: str) -> Sql:
    """``where`` narrowed to ids not in ``exclude`` and past ``after`` in ``order``."""
    if exclude:
        where = where & rowsql.any_of_sql("c.id", exclude).negated()
    if after is not None:
        where = where & Sql(f"c.id {'>' if order == 'asc' else '<'} %s", (after,))
    return where


@overload
def keyset_after(*, position: dict | None, kind: type[int] = ...) -> int | None: ...
@overload
def keyset_after(*, position: dict | None, kind: type[str]) -> str | None: ...
def keyset_after(*, position: dict | None, kind: type[int] | type[str] = int) -> int | str | None:
    """The key a keyset cursor's position holds (an id, or a path when ``kind`` is ``str``), or
    None for the first page; ``InvalidInput`` when it is not of that kind."""
    if position is None:
        return None
    after = position.get("k")
    if not isinstance(after, kind) or isinstance(after, bool):
        raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
    return after


def page_by_id(*, rows: QuerySet, scope: str, cursor: str | None, limit: int, newest_first: bool = False) -> Page:
    """A page of ``rows`` (any model's queryset) in primary key order, oldest first unless
    ``newest_first``: ``limit`` model instances as ``items``, and the cursor of the next page
    (None on the last), scoped like every list's. One query whatever the page."""
    after = keyset_after(position=decode_cursor(cursor=cursor, scope=scope))
    if after is not None:
        rows = rows.filter(pk__lt=after) if newest_first else rows.filter(pk__gt=after)
    found = list(rows.order_by("-pk" if newest_first else "pk")[: limit + 1])
    page = found[:limit]
    return Page(
        items=page, next_cursor=encode_cursor(scope=scope, position={"k": page[-1].pk}) if len(found) > limit else None
    )
