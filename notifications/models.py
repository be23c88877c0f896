"""Notifications: what a reader is told (in the widget and by email), what they asked to be told,
and the subjects they follow.

One ``Notification`` row per recipient and event is both the in-app entry and the email's state:
the fan-out writes it once, with the email already decided from the recipient's preferences
(queued for now, waiting for the daily digest, or none), so a comment reaching 10,000
subscribers is 10,000 rows written by one statement, not 20,000 in two tables. The unique
``(recipient, event)`` makes every writer idempotent: a replayed event inserts nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Kind(models.TextChoices):
    REPLY = "reply"  # a reply to your comment
    MENTION = "mention"  # an @mention of you in a comment
    SUBSCRIPTION = "subscription"  # a new top-level comment in a discussion you follow
    LIKE_MILESTONE = "like_milestone"  # your comment reached 10, 50, 100... likes (opt-in)
    DECISION = "decision"  # a moderator approved, rejected or removed your held comment
    QUEUE = "queue"  # moderators: the review queue of your site is filling up
    HELD = "held"  # moderators: a comment on your site waits for your decision (approve/reject links)


# Kinds caused by a comment being published: one notification per recipient and comment, the
# most specific kind winning (a reply that also mentions you is a reply).
COMMENT_KINDS = (Kind.REPLY, Kind.MENTION, Kind.SUBSCRIPTION)


class EmailMode(models.TextChoices):
    IMMEDIATELY = "immediately"
    DAILY = "daily"  # in the daily digest
    NEVER = "never"


# What a reader is emailed about each kind until they say otherwise. Like milestones are off
# in the widget too until the reader turns them on (``Preferences.like_milestones``).
DEFAULT_EMAIL: dict[str, str] = {
    Kind.REPLY: EmailMode.IMMEDIATELY,
    Kind.MENTION: EmailMode.IMMEDIATELY,
    Kind.SUBSCRIPTION: EmailMode.IMMEDIATELY,
    Kind.LIKE_MILESTONE: EmailMode.NEVER,
    Kind.DECISION: EmailMode.IMMEDIATELY,
    Kind.QUEUE: EmailMode.IMMEDIATELY,
    Kind.HELD: EmailMode.IMMEDIATELY,
}
DEFAULT_EMAIL = {str(kind): str(mode) for kind, mode in DEFAULT_EMAIL.items()}  # plain strings, for JSON and the schema


class EmailState(models.TextChoices):
    NONE = "", "no email"
    QUEUED = "queued"  # to be sent on its own, now
    DIGEST = "digest"  # waiting for the recipient's daily digest
    SENDING = "sending"  # claimed by a sender until ``email_claimed_until``
    SENT = "sent"
    SKIPPED = "skipped"  # no longer to be sent (comment gone, preference changed, no address)
    FAILED = "failed"  # its message could not be made (an address no header can carry): not retried


class Notification(models.Model):
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # What caused it, unique per recipient: "c<comment id>" for the comment kinds,
    # "l<comment id>:<likes>", "d<comment id>:<decision>", and for the moderators' queue
    # "q<site id>:<period>" (NOTIFICATIONS_QUEUE_PERIOD), "h<comment id>:<event id>" for a hold.
    event = models.CharField(max_length=64)
    # What it is about. The fan-out writes these from rows it has just read, and deleting them
    # cascades here through Django; checking each reference again in the database, for each of
    # 10,000 rows a comment may bring, halved the fan-out's speed (docs/benchmarks.md).
    site = models.ForeignKey(
        "comments.Site", null=True, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    subject = models.ForeignKey(
        "comments.Subject", null=True, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    comment = models.ForeignKey(
        "comments.Comment", null=True, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    # Per kind: {"likes": 100}; {"decision": "approved"}; {"site": key, "open": n, "new": n,
    # "newest": id}.
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    read_at = models.DateTimeField(null=True, blank=True)
    email = models.CharField(max_length=8, choices=EmailState.choices, blank=True, default=EmailState.NONE)
    email_claimed_until = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["recipient", "event"], name="notification_once_per_event")]
        indexes = [
            # the inbox, newest first
            models.Index(F("recipient"), F("id").desc(), name="notification_inbox"),
            # the unread count (the widget's badge)
            models.Index(fields=["recipient"], condition=Q(read_at__isnull=True), name="notification_unread"),
            # the sender's queue: emails to send now, and claims of senders that died
            models.Index(
                fields=["email", "id"], condition=Q(email__in=["queued", "sending"]), name="notification_email_queue"
            ),
            # the daily digest, grouped per recipient
            models.Index(fields=["recipient", "id"], condition=Q(email="digest"), name="notification_digest_waiting"),
            # what each recipient was emailed lately (NOTIFICATIONS_EMAIL_HOURLY_LIMIT)
            models.Index(fields=["recipient", "emailed_at"], condition=Q(email="sent"), name="notification_emailed"),
            # the comments a site held lately (SiteModeratorEmail's "auto")
            models.Index(fields=["site", "created_at"], condition=Q(kind="held"), name="notification_held_by_site"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.recipient_id} ({self.event})"


class Preferences(models.Model):
    """A reader's notification settings; a reader without a row has the defaults."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+")
    # The language of their emails.
    language = models.CharField(max_length=8, choices=settings.LANGUAGES, default="en")
    like_milestones = models.BooleanField(default=False)
    email_reply = models.CharField(max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.REPLY])
    email_mention = models.CharField(max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.MENTION])
    email_subscription = models.CharField(
        max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.SUBSCRIPTION]
    )
    email_like_milestone = models.CharField(
        max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.LIKE_MILESTONE]
    )
    email_decision = models.CharField(max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.DECISION])
    email_queue = models.CharField(max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.QUEUE])
    email_held = models.CharField(max_length=12, choices=EmailMode.choices, default=DEFAULT_EMAIL[Kind.HELD])

    class Meta:
        verbose_name_plural = "preferences"

    def __str__(self) -> str:
        return f"notification settings of user {self.user_id}"


def email_field(kind: str) -> str:
    """The ``Preferences`` column holding the email mode of ``kind``."""
    return f"email_{kind}"


class SubscriptionState(models.TextChoices):
    SUBSCRIBED = "subscribed"  # told of every new top-level comment
    MUTED = "muted"  # no email about this subject at all (replies and mentions stay in the widget)


class Subscription(models.Model):
    """A reader's choice about one subject (a discussion); none: neither followed nor muted."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    subject = models.ForeignKey("comments.Subject", on_delete=models.CASCADE, related_name="+", db_index=False)
    state = models.CharField(max_length=10, choices=SubscriptionState.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # also the fan-out's scan of a subject's subscribers, and the muted check per recipient
            models.UniqueConstraint(fields=["subject", "user"], name="subscription_by_subject_user"),
        ]
        indexes = [models.Index(fields=["user"], name="subscription_by_user")]

    def __str__(self) -> str:
        return f"user {self.user_id}: {self.state} to subject {self.subject_id}"


class HeldEmail(models.TextChoices):
    """How a site's moderators hear of a held comment (each moderator may still turn it off)."""

    AUTO = "auto", "one email per comment, the daily digest on busy days"
    EACH = "each", "one email per comment"
    DIGEST = "digest", "in the daily digest"
    OFF = "off", "no email (the review-queue notice instead)"


class SiteModeratorEmail(models.Model):
    """A site's choice of how its moderators are emailed about held comments; a site without a
    row has ``auto`` with ``NOTIFICATIONS_HELD_PER_DAY``."""

    site = models.OneToOneField("comments.Site", primary_key=True, on_delete=models.CASCADE, related_name="+")
    held = models.CharField(
        "emails about held comments", max_length=8, choices=HeldEmail.choices, default=HeldEmail.AUTO
    )
    # "auto" sends one email per held comment until the site has held this many in the last 24
    # hours, then puts the rest in the daily digest; empty: NOTIFICATIONS_HELD_PER_DAY.
    held_per_day = models.PositiveIntegerField("held comments a day before the digest", null=True, blank=True)

    class Meta:
        verbose_name = "moderators' email"
        verbose_name_plural = "moderators' emails"

    def __str__(self) -> str:
        return f"held-comment emails of site {self.site_id}: {self.held}"
