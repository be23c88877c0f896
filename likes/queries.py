"""Like state read from the database (the embedded default, and Redis' fallback)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from .models import Like


def liked_by(user) -> Exists:
    """Over ``comment_content`` rows: does ``user`` like that comment?"""
    return Exists(Like.objects.filter(comment_id=OuterRef("comment_id"), user_id=user.pk))
