"""The list statement is generated from one column specification, and composed only of
``Sql`` pieces and orders checked against the comment table."""

from __future__ import annotations

import pytest

from comments import rowsql
from comments.models import Comment
from comments.rowsql import Sql

from ..factories import CommentFactory, UserFactory


def test_a_list_row_decodes_every_field_from_the_column_specification(subject):
    author = UserFactory(username="ann", display_name="Ann")
    root = CommentFactory(subject=subject, author=author)
    reply = CommentFactory(subject=subject, author=UserFactory(username="bo"), reply_to=root)
    row = rowsql.fetch_ids([reply.pk])[0]
    stored = Comment.objects.get(pk=reply.pk)
    for name in (
        "pk",
        "subject_id",
        "reply_to_id",
        "root_id",
        "path",
        "depth",
        "floor",
        "author_id",
        "status",
        "visibility",
        "pinned",
        "featured",
        "like_count",
        "reply_count",
        "descendant_count",
        "created_at",
        "edited_at",
    ):
        assert getattr(row, name) == getattr(stored, name), name
    assert (row.author.pk, row.author.username) == (reply.author_id, "bo")
    target = row.reply_target
    assert (target.pk, target.status, target.author_id, target.author.public_name) == (
        root.pk,
        "published",
        author.pk,
        "Ann",
    )
    assert rowsql.fetch_ids([root.pk])[0].reply_target is None


def test_a_list_is_ordered_by_named_columns_only(subject):
    first, second = CommentFactory(subject=subject), CommentFactory(subject=subject)
    where = Sql("c.subject_id = %s", (subject.pk,))
    assert [r.pk for r in rowsql.fetch(where, order=(("id", "desc"),))] == [second.pk, first.pk]
    with pytest.raises(ValueError, match="not a column"):
        rowsql.fetch(where, order=(("id; DROP TABLE x", "asc"),))
    with pytest.raises(ValueError, match="not a direction"):
        rowsql.fetch(where, order=(("id", "sideways"),))


def test_a_condition_must_be_an_sql_piece_not_a_string(subject):
    with pytest.raises(TypeError):
        rowsql.fetch("1 = 1")  # type: ignore[arg-type]  # the wrong type is the point
