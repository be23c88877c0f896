"""Storage of the comment core (DESIGN.md, "Storage").

The hot, narrow ``Comment`` row (table ``comment_index``) is kept apart from the wide
``CommentContent`` row (``comment_content``): list queries scan small rows and fetch text by
primary key in one batch. Every comment table carries ``subject_id``, the distribution column
should the data ever move to Citus.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from . import paths


class User(AbstractUser):
    """A local account, or the local twin of a host site's user signed in by SSO."""

    display_name = models.CharField(max_length=100, blank=True)
    avatar_url = models.URLField(max_length=1000, blank=True)
    # A reader who commented as a guest (issue 14): a name, no account; shown with a "guest"
    # mark wherever their comments are, so a guest named like a member cannot pass as them.
    is_guest = models.BooleanField(default=False)
    # The site whose sign-in issued the bearer token of the request this instance was read for
    # (comments.authentication); None for a sign-in good on every site. Not a column.
    token_site_id: int | None = None

    @property
    def public_name(self) -> str:
        return self.display_name or self.username


class IdWorkerLease(models.Model):
    """One row per process that made ids: its primary key, modulo 256, is the worker number."""

    pid = models.IntegerField()
    host = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"ids of process {self.pid} on {self.host}"


class Mode(models.TextChoices):
    FLAT = "flat"
    TWO_LEVEL = "two_level"
    STACKED = "stacked"


class ModerationPolicy(models.TextChoices):
    POST = "post", "post-moderation"
    PRE = "pre", "pre-moderation"


class Site(models.Model):
    """A tenant that embeds the widget."""

    key = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    allowed_origins = models.JSONField(default=list, blank=True)
    sso_secret = models.CharField(max_length=200, blank=True)
    default_mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.TWO_LEVEL)
    moderation = models.CharField(max_length=4, choices=ModerationPolicy.choices, default=ModerationPolicy.POST)
    report_threshold = models.PositiveSmallIntegerField(default=3)
    # How readers may sign in (issue 14): the host's SSO payload, a one-time link by email, the
    # OpenID Connect providers named here (keys of ACCOUNTS_OIDC_PROVIDERS), or as a guest.
    # A new site takes SSO and email; sites from before the setting kept SSO alone.
    signin_sso = models.BooleanField("sign-in by the host's SSO", default=True)
    signin_email = models.BooleanField("sign-in by email link", default=True)
    signin_oidc = models.JSONField("OpenID Connect providers", default=list, blank=True)
    signin_guests = models.BooleanField("guest comments", default=False)
    # Whether a provider's account joins the local user an address it vouches for is verified
    # for (by email link or by another provider); off, each provider's account is a user of its own.
    signin_link_email = models.BooleanField("join sign-ins by verified email", default=False)
    # Guests' comments wait for a moderator unless the site says otherwise (whatever
    # ``moderation`` says for signed-in readers).
    guest_moderation = models.CharField(
        "moderation of guest comments", max_length=4, choices=ModerationPolicy.choices, default=ModerationPolicy.PRE
    )
    moderators = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="moderated_sites")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key

    @property
    def first_party_signin(self) -> bool:
        """Whether a reader can sign in on the service itself (the widget's popup), without the
        host."""
        return self.signin_email or bool(self.signin_oidc)


class ExternalIdentity(models.Model):
    """Maps a host site's user id (from SSO) to the same local user every time."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE)
    external_id = models.CharField(max_length=255)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    email = models.EmailField(max_length=254, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "external identities"
        constraints = [models.UniqueConstraint(fields=["site", "external_id"], name="sso_identity_by_site_id")]

    def __str__(self) -> str:
        return f"{self.external_id} of site {self.site_id}"


class ApiToken(models.Model):
    """A bearer token. Only its SHA-256 is stored, so a database leak leaks no usable token."""

    key_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    site = models.ForeignKey(Site, null=True, blank=True, on_delete=models.CASCADE)

    def __str__(self) -> str:
        return f"token of user {self.user_id}, until {self.expires_at:%Y-%m-%d %H:%M}"


class SubjectState(models.TextChoices):
    OPEN = "open"
    CLOSED = "closed"


class Subject(models.Model):
    """The thing commented on: an article, a video, a page."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="subjects")
    key = models.CharField(max_length=255)
    title = models.CharField(max_length=300, blank=True)
    url = models.URLField(max_length=2000, blank=True)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.TWO_LEVEL)
    state = models.CharField(max_length=6, choices=SubjectState.choices, default=SubjectState.OPEN)
    # Publicly visible comments, and those of them at the top level.
    comment_count = models.IntegerField(default=0)
    root_count = models.IntegerField(default=0)
    # Last top-level floor number handed out; never decremented, so floors are never reused.
    floor_seq = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "comment_subject"

    def __str__(self) -> str:
        return f"{self.site_id}:{self.key}"


class SubjectKey(models.Model):
    """How a page finds its subject: the site's key for it (``Subject.key``, kept there for
    display and exports), unique per site. The key is the table's primary key, ``(site_id,
    key)``, so that it holds the distribution column on Citus, where this table is distributed
    by ``site_id`` (``infra.citus``) and ``comment_subject`` by its id: a subject's key
    could not be unique on a table sharded by subject. Every subject has its row, made with it
    (``comments.services.subjects_create``); the row's unique key decides which of two first
    readers of a new page makes its subject.

    No database foreign key to the subject (Citus refuses one between tables distributed by
    different columns): Django's ``on_delete`` removes the row with its subject."""

    pk = models.CompositePrimaryKey("site", "key")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, db_index=False)  # the key's first column
    key = models.CharField(max_length=255)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, db_constraint=False, related_name="keys")

    class Meta:
        db_table = "comment_subject_key"

    def __str__(self) -> str:
        return f"{self.site_id}:{self.key}"


class Status(models.TextChoices):
    PUBLISHED = "published"
    PENDING = "pending"
    SHADOW = "shadow"
    DELETED = "deleted"
    REJECTED = "rejected"


class Visibility(models.TextChoices):
    PUBLIC = "public"
    FRIENDS = "friends"


# Statuses whose content nobody but moderators may read; shown as placeholders when they
# still have visible descendants.
GONE_STATUSES = (Status.DELETED, Status.REJECTED)


def is_counted(status: str, visibility: str) -> bool:
    """Whether a comment counts in the public counters: what an anonymous reader sees."""
    return status == Status.PUBLISHED and visibility == Visibility.PUBLIC


class PathField(models.CharField):
    """A materialized path, compared bytewise on every database (collation "C" on PostgreSQL;
    SQLite's default BINARY collation already is)."""

    def db_parameters(self, connection):
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


class Comment(models.Model):
    """The index row of a comment. Its id comes from ``comments.ids.new_id`` before insert.

    On PostgreSQL the primary key is (id, subject_id), for Citus (``infra.citus``); ``id``
    alone is unique by generation and stays the model's primary key."""

    id = models.BigIntegerField(primary_key=True)
    subject = models.ForeignKey(Subject, on_delete=models.CASCADE, db_index=False)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        db_index=False,
        related_name="comments",
    )
    # The foreign keys between comment tables are composite on PostgreSQL, (reply_to_id,
    # subject_id) -> (id, subject_id), made by migrations (infra.citus); Django, which cannot
    # point at a composite key, checks none of its own there.
    reply_to = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="direct_replies",
        db_index=False,
        db_constraint=False,
    )
    root = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="thread",
        db_index=False,
        db_constraint=False,
    )
    path = PathField(max_length=paths.max_path_length(paths.MAX_DEPTH_SUPPORTED))
    depth = models.PositiveSmallIntegerField(default=0)
    floor = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PUBLISHED)
    visibility = models.CharField(max_length=8, choices=Visibility.choices, default=Visibility.PUBLIC)
    pinned = models.BooleanField(default=False)
    featured = models.BooleanField(default=False)
    like_count = models.IntegerField(default=0)
    # Top-level: publicly visible replies in the whole thread. Reply: its visible direct replies.
    reply_count = models.IntegerField(default=0)
    # Publicly visible comments below this one in the tree; a deleted comment with any is kept
    # as a placeholder.
    descendant_count = models.IntegerField(default=0)
    # Top-level only: last reply floor handed out in this thread.
    reply_floor_seq = models.IntegerField(default=0)
    # "Hot" order of top-level comments: likes plus twice the visible replies of the thread.
    hot_score = models.GeneratedField(
        expression=F("like_count") + 2 * F("reply_count"),
        output_field=models.IntegerField(),
        db_persist=True,
    )
    created_at = models.DateTimeField()
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "comment_index"
        indexes = [
            # flat mode, stacked mode, subject-wide scans: old/new by id
            models.Index(fields=["subject", "id"], name="comment_flat_by_time"),
            # two-level list 1, sort=new|old, pages after the first
            models.Index(fields=["subject", "id"], condition=Q(depth=0), name="comment_roots_by_time"),
            # two-level list 1, first page of sort=new / sort=old: pinned first, then by time
            models.Index(
                F("subject"),
                F("pinned").desc(),
                F("id").desc(),
                condition=Q(depth=0),
                name="comment_roots_pinned_new",
            ),
            models.Index(
                F("subject"),
                F("pinned").desc(),
                F("id"),
                condition=Q(depth=0),
                name="comment_roots_pinned_old",
            ),
            # two-level list 1, sort=hot: pinned, then hottest, ties newest
            models.Index(
                F("subject"),
                F("pinned").desc(),
                F("hot_score").desc(),
                F("id").desc(),
                condition=Q(depth=0),
                name="comment_roots_by_hot",
            ),
            # subtree and depth-first tree: one range scan over the path
            models.Index(fields=["subject", "path"], name="comment_tree_by_path"),
            # two-level list 2 (replies of a thread), old/new. A thread's queries name its subject
            # too (infra.citus): with it in the index, PostgreSQL never joins the whole
            # subject's index to the thread's instead of walking this one.
            models.Index(fields=["root", "subject", "id"], name="comment_thread_by_time"),
            # reply previews and list 2 sort=hot: most liked first, ties oldest
            models.Index(F("root"), F("subject"), F("like_count").desc(), F("id"), name="comment_thread_by_likes"),
            # a user's history, newest first
            models.Index(F("author"), F("id").desc(), name="comment_user_history"),
            # direct replies of a comment (counter repair, "reply to" links)
            models.Index(fields=["reply_to"], name="comment_direct_replies"),
            # authors of comments that not everyone sees: their readers skip the shared page cache
            models.Index(
                fields=["subject", "author"],
                condition=Q(status__in=["pending", "shadow"]) | Q(visibility="friends"),
                name="comment_private_authors",
            ),
        ]

    def __str__(self) -> str:
        return f"comment {self.id}"

    @property
    def site_id(self) -> int:
        return self.subject.site_id

    def ancestor_ids(self) -> list[int]:
        """Ids from the top-level comment down to the parent in the tree, from the path."""
        return paths.split_path(self.path)[:-1]


class CommentContent(models.Model):
    """The wide text row of a comment; never read by list scans, fetched by primary key."""

    # Primary key (comment_id, subject_id) and a composite foreign key on PostgreSQL
    # (infra.citus).
    comment = models.OneToOneField(
        Comment, primary_key=True, on_delete=models.CASCADE, related_name="content", db_constraint=False
    )
    subject_id = models.BigIntegerField()
    body = models.TextField()
    html = models.TextField()
    mentions = models.JSONField(default=list, blank=True)
    author_ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=512, blank=True)

    class Meta:
        db_table = "comment_content"

    def __str__(self) -> str:
        return f"text of comment {self.comment_id}"


class Follow(models.Model):
    follower = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="following_set")
    followee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="follower_set")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["follower", "followee"], name="follow_by_pair"),
            models.CheckConstraint(condition=~Q(follower=F("followee")), name="follow_not_self"),
        ]
        indexes = [models.Index(fields=["followee", "follower"], name="follow_reverse_lookup")]

    def __str__(self) -> str:
        return f"user {self.follower_id} follows user {self.followee_id}"


class DeferredTask(models.Model):
    """A Celery task that could not be queued because the broker was down (``comments.outbox``):
    queued by the beat task ``comments.send_deferred`` once the broker is back."""

    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.task}{tuple(self.args)} kept at {self.created_at:%Y-%m-%d %H:%M:%S}"


class IdempotentRequest(models.Model):
    """The kept answer to a user's write sent with an ``Idempotency-Key``
    (``comments.idempotency``): the same key from the same user gets this answer back, for
    ``COMMENTS_IDEMPOTENCY_TTL`` seconds."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False)
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    body = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="comments_idempotent_user_key")]

    def __str__(self) -> str:
        return f"{self.key} of user {self.user_id}"
