from django.conf import settings
from django.db import models


class Like(models.Model):
    """One user's like of one comment; ``subject_id`` rides along for co-location."""

    comment = models.ForeignKey("comments.Comment", on_delete=models.CASCADE, db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False)
    subject_id = models.BigIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["comment", "user"], name="like_by_comment_user")]
        indexes = [models.Index(fields=["user", "comment"], name="like_liked_by_user")]
