"""What imports remember, what they stage while they run, and each site's erasure policy.

``ImportedItem`` is the memory that makes an import idempotent: every thread and comment an
import brought in, by its id in the source, with what it became here. Importing the same file
again finds every item there and adds nothing; a newer export adds only the items it does not
find.

``StagedRecord`` holds one run's parsed records between the two passes of an import
(docs/operations.md, "Data in and out"): the file is read once, streaming, into these rows,
and the comments are then inserted in time order, parents first, a batch at a time, so memory
stays bounded whatever the size of the file. A run's rows are deleted when it ends.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ImportFormat(models.TextChoices):
    DISQUS = "disqus", "Disqus XML export"
    WORDPRESS = "wordpress", "WordPress WXR export"
    ISSO = "isso", "Isso SQLite database"
    REMARK42 = "remark42", "Remark42 backup (JSON lines)"
    JSON = "json", "This service's JSON lines export"


class RunState(models.TextChoices):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ImportRun(models.Model):
    """One import of one file into one site, with its summary (what was imported, what was
    skipped and why)."""

    site = models.ForeignKey("comments.Site", on_delete=models.CASCADE, related_name="+")
    format = models.CharField(max_length=16, choices=ImportFormat.choices)
    source_name = models.CharField(max_length=255, blank=True)
    # How threads became subjects: {"map_url": ["OLD=NEW", ...], "key_from": "path"|"url"|"id"|""}.
    options = models.JSONField(default=dict, blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=8, choices=RunState.choices, default=RunState.RUNNING)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "portability_run"

    def __str__(self) -> str:
        return f"{self.format} import #{self.pk} into {self.site_id}"


class ItemKind(models.TextChoices):
    THREAD = "t", "thread"
    COMMENT = "c", "comment"


class ImportedItem(models.Model):
    """A source item and what it became: a subject (``kind`` thread) or a comment. ``target_id``
    carries no foreign key on purpose: a comment removed later (a user's erasure) must still
    count as imported, so that importing the old file again does not bring it back."""

    site = models.ForeignKey("comments.Site", on_delete=models.CASCADE, related_name="+", db_index=False)
    source = models.CharField(max_length=16, choices=ImportFormat.choices)
    kind = models.CharField(max_length=1, choices=ItemKind.choices)
    source_id = models.CharField(max_length=255)
    target_id = models.BigIntegerField()

    class Meta:
        db_table = "portability_item"
        constraints = [
            models.UniqueConstraint(fields=["site", "source", "kind", "source_id"], name="imported_item_by_source_id"),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.get_kind_display()} {self.source_id} -> {self.target_id}"


class StagedRecord(models.Model):
    """One parsed thread (``kind`` t) or comment (``kind`` c) of a running import."""

    run = models.ForeignKey(ImportRun, on_delete=models.CASCADE, db_index=False)
    seq = models.IntegerField()  # position in the file
    kind = models.CharField(max_length=1, choices=ItemKind.choices)
    source_id = models.CharField(max_length=255)
    # Threads: candidate subject keys, best first, one per line; the url and title.
    keys = models.TextField(blank=True)
    url = models.TextField(blank=True)
    title = models.TextField(blank=True)
    closed = models.BooleanField(default=False)
    mode = models.CharField(max_length=10, blank=True)
    # Comments.
    thread_id = models.CharField(max_length=255, blank=True)
    parent_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - NULL: a top-level comment
    # The time the comment is placed at: its own, or its parent's when the file dates a reply
    # before the comment it answers (so parents always come first).
    sort_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(null=True)
    edited_at = models.DateTimeField(null=True)
    status = models.CharField(max_length=10, blank=True)
    visibility = models.CharField(max_length=8, blank=True)
    pinned = models.BooleanField(default=False)
    featured = models.BooleanField(default=False)
    author_id = models.CharField(max_length=255, blank=True)  # external id; blank: no author
    author_name = models.CharField(max_length=255, blank=True)
    author_email = models.CharField(max_length=254, blank=True)
    author_avatar = models.CharField(max_length=1000, blank=True)
    body = models.TextField(blank=True)
    markup = models.CharField(max_length=8, blank=True)
    ip = models.GenericIPAddressField(null=True)
    user_agent = models.CharField(max_length=512, blank=True)

    class Meta:
        db_table = "portability_staged"
        indexes = [
            # the insert pass: a run's comments in time order, parents first
            models.Index(fields=["run", "kind", "sort_at", "seq"], name="staged_by_time"),
            # duplicates, parents and threads by source id
            models.Index(fields=["run", "kind", "source_id", "seq"], name="staged_by_source_id"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.source_id} of import {self.run_id}"


class ErasureMode(models.TextChoices):
    PLACEHOLDER = "placeholder", "keep every comment as a deleted placeholder"
    REMOVE = "remove", "remove comments without replies; keep the others as placeholders"


class SitePrivacy(models.Model):
    """A site's privacy settings: what erasing a user does to their comments on it. A site
    without a row uses ``PORTABILITY_ERASURE_DEFAULT``."""

    site = models.OneToOneField("comments.Site", primary_key=True, on_delete=models.CASCADE, related_name="privacy")
    erasure = models.CharField(max_length=12, choices=ErasureMode.choices, default=ErasureMode.PLACEHOLDER)

    class Meta:
        db_table = "portability_site_privacy"
        verbose_name_plural = "site privacy settings"

    def __str__(self) -> str:
        return f"privacy of site {self.site_id}: erasure by {self.erasure}"
