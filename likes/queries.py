"""Like state read from the database (the embedded default, and Redis' fallback)."""

from __future__ import annotations

from django.db import connection

from .models import Like


def liked_sql(user_id: int) -> tuple[str, list]:
    """Over a ``comment_content`` row aliased ``cc``: does ``user_id`` like that comment? One
    probe of the ``(comment, user)`` unique index."""
    table = connection.ops.quote_name(Like._meta.db_table)
    return f"EXISTS (SELECT 1 FROM {table} lk WHERE lk.comment_id = cc.comment_id AND lk.user_id = %s)", [user_id]
