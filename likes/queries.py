"""Like state read from the database (the embedded default, and Redis' fallback)."""

from __future__ import annotations

from .models import Like


def like_state_from_database(viewer, comments) -> tuple[dict[int, int], set[int]]:
    """Counts from the comment rows; the viewer's likes among them in one query."""
    counts = {c.pk: c.like_count for c in comments}
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return counts, set()
    liked = set(
        Like.objects.filter(user_id=viewer.pk, comment_id__in=list(counts)).values_list("comment_id", flat=True)
    )
    return counts, liked
