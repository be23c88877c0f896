"""Moderation: the word list, sanctions, reports, the review queue and the audit log.

Comment statuses change only through ``comments.services.comment_set_status``; moderation
decides *when*, and writes its audit entry in the same transaction as the change.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class WordAction(models.TextChoices):
    BLOCK = "block"  # refused: 400 content_blocked
    REVIEW = "review"  # saved as pending, with a review task
    MASK = "mask"  # published with the match replaced by "*"


class WordEntry(models.Model):
    """One word of the filter; ``site`` None applies to every site (staff only)."""

    site = models.ForeignKey("comments.Site", null=True, blank=True, on_delete=models.CASCADE, related_name="words")
    word = models.CharField(max_length=100)
    # The word as the filter matches it (wordfilter.normalize_word): what uniqueness is about.
    normalized = models.CharField(max_length=400, editable=False)
    action = models.CharField(max_length=6, choices=WordAction.choices)
    # Also match inside longer words ("ass" in "class"); off by default, against false positives.
    inside_words = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "word entries"
        db_table = "moderation_word"
        constraints = [
            models.UniqueConstraint(
                fields=["site", "normalized"], condition=Q(site__isnull=False), name="word_unique_per_site"
            ),
            models.UniqueConstraint(fields=["normalized"], condition=Q(site__isnull=True), name="word_unique_global"),
        ]

    def __str__(self) -> str:
        return f"{self.word} ({self.action})"


class SanctionKind(models.TextChoices):
    BAN = "ban"
    SHADOW_BAN = "shadow_ban"
    TRUST = "trust"


class Sanction(models.Model):
    """A user's standing on one site; in force while ``until`` is empty or in the future (no job
    needed to end it)."""

    site = models.ForeignKey("comments.Site", on_delete=models.CASCADE, related_name="sanctions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sanctions")
    kind = models.CharField(max_length=10, choices=SanctionKind.choices)
    until = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "moderation_sanction"
        indexes = [models.Index(fields=["site", "user"], name="sanction_by_site_user")]

    def __str__(self) -> str:
        return f"{self.kind} of user {self.user_id} on site {self.site_id}"


class ReportReason(models.TextChoices):
    SPAM = "spam"
    ABUSE = "abuse"
    ILLEGAL = "illegal"
    OTHER = "other"


class Report(models.Model):
    """A reader's report of a comment: one per user per comment."""

    # (comment_id, subject_id) -> the comment's (id, subject_id) on PostgreSQL (infra.citus).
    comment = models.ForeignKey(
        "comments.Comment", on_delete=models.CASCADE, related_name="reports", db_index=False, db_constraint=False
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    subject_id = models.BigIntegerField()
    reason = models.CharField(max_length=8, choices=ReportReason.choices)
    detail = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "moderation_report"
        constraints = [models.UniqueConstraint(fields=["comment", "user", "subject_id"], name="report_once_per_user")]

    def __str__(self) -> str:
        return f"report of comment {self.comment_id} by user {self.user_id} ({self.reason})"


class TaskState(models.TextChoices):
    OPEN = "open"
    DONE = "done"


class ReviewTask(models.Model):
    """A comment waiting for a moderator's decision. At most one open task per comment; new
    reasons join it and raise its priority."""

    # (comment_id, subject_id) -> the comment's (id, subject_id) on PostgreSQL (infra.citus).
    comment = models.ForeignKey(
        "comments.Comment", on_delete=models.CASCADE, related_name="review_tasks", db_index=False, db_constraint=False
    )
    subject_id = models.BigIntegerField()
    site = models.ForeignKey("comments.Site", on_delete=models.CASCADE, related_name="+", db_index=False)
    # ["word:<word>", "report:spam", "spam:links", "policy:pre", ...], oldest first, no repeats.
    reasons = models.JSONField(default=list)
    priority = models.IntegerField(default=0)
    state = models.CharField(max_length=4, choices=TaskState.choices, default=TaskState.OPEN)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.CharField(max_length=10, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "moderation_task"
        constraints = [
            models.UniqueConstraint(
                fields=["comment", "subject_id"], condition=Q(state="open"), name="task_one_open_per_comment"
            ),
        ]
        indexes = [
            # the queue: a site's open (or done) tasks, highest priority first, then oldest
            models.Index(F("site"), F("state"), F("priority").desc(), F("id"), name="task_queue_by_priority"),
            # every task of a comment (closing them on a decision)
            models.Index(fields=["comment", "state"], name="task_by_comment"),
        ]

    def __str__(self) -> str:
        return f"review of comment {self.comment_id} ({self.state})"


class AuditEntry(models.Model):
    """What a moderator (or the system, ``actor`` None) did; written in the same transaction as
    the change, never updated. ``site`` None: a change of what applies to every site (the
    global word list)."""

    site = models.ForeignKey(
        "comments.Site", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=32)
    comment_id = models.BigIntegerField(null=True, blank=True)
    from_status = models.CharField(max_length=10, null=True, blank=True)  # noqa: DJ001 - NULL: no status
    to_status = models.CharField(max_length=10, null=True, blank=True)  # noqa: DJ001 - NULL: no status
    reason = models.CharField(max_length=1000, blank=True)
    # Where the decision was taken when it was not the console, the API or the admin ("email":
    # a link in a held comment's email, docs/security.md "E-mail decision links").
    channel = models.CharField(max_length=8, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "audit entries"
        db_table = "moderation_audit"
        indexes = [
            models.Index(F("site"), F("id").desc(), name="audit_log_by_site"),
            # a moderator's actions on a comment (does their decision stand against a later check?)
            models.Index(
                fields=["comment_id", "created_at"], condition=Q(actor__isnull=False), name="audit_decisions_by_comment"
            ),
        ]

    def __str__(self) -> str:
        actor = "the system" if self.actor_id is None else f"user {self.actor_id}"
        target = f" on comment {self.comment_id}" if self.comment_id is not None else ""
        return f"{self.action} by {actor}{target}"
