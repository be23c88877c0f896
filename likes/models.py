"""Like rows: the durable record of likes, written in batches by the flush (``likes.flush``)
or directly when Redis is unavailable.

A row is never deleted by an unlike: it turns inactive and keeps the ``version`` of the last
action applied to it. Actions can arrive late or twice (a flush killed after its commit and
replayed, a stream entry reclaimed after a newer one was applied, a like written straight to
the database while Redis was unreachable); an action is applied only if its version is newer
than the row's, so replays and reorderings converge on the last action and the counts stay
exact.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q


class Like(models.Model):
    """One user's like of one comment; ``subject_id`` rides along for co-location."""

    # (comment_id, subject_id) -> the comment's (id, subject_id) on PostgreSQL (infra.citus).
    comment = models.ForeignKey("comments.Comment", on_delete=models.CASCADE, db_index=False, db_constraint=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False)
    subject_id = models.BigIntegerField()
    # When the like was given (kept across repeated likes; the likers list is ordered by it).
    created_at = models.DateTimeField()
    active = models.BooleanField(default=True)
    # Version of the last action applied: (milliseconds << 20) | sequence, from the Redis
    # stream entry id, or from the clock for actions written straight to the database.
    version = models.BigIntegerField(default=0)

    class Meta:
        # Every key carries subject_id, the distribution column (infra.citus); last, so the
        # key still serves lookups by comment.
        constraints = [models.UniqueConstraint(fields=["comment", "user", "subject_id"], name="like_by_comment_user")]
        # "liked" flags of a page (the database fallback) probe the unique (comment, user)
        # index above, one entry per comment; a second index by user would cost every flush an
        # index insert per like for no read.
        indexes = [
            # the likers list, oldest like first (the database fallback, and rebuilding Redis)
            # (subject_id rides along on PostgreSQL, so that the likers read with their comment,
            # joined on it for Citus, stay an index-only scan)
            models.Index(
                fields=["comment", "created_at", "user"],
                condition=Q(active=True),
                include=["subject_id"],
                name="like_likers_by_time",
            ),
        ]

    def __str__(self) -> str:
        return f"user {self.user_id} {'likes' if self.active else 'no longer likes'} comment {self.comment_id}"


class StaleLikeState(models.Model):
    """A comment whose likes were written straight to the database while Redis was configured
    but unreachable: its Redis state is out of date and is dropped (to be rebuilt from these
    rows) as soon as Redis answers again."""

    comment_id = models.BigIntegerField(primary_key=True)
    subject_id = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"like state of comment {self.comment_id}, behind the database"
