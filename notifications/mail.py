"""The emails of notifications: each ``queued`` row sent on its own, each reader's ``digest`` rows
as one message a day, both by beat tasks (``tasks.send_emails``, ``tasks.send_digests``).

A sender never holds a row while it talks to the mail server without having claimed it: it
**claims** a batch (``queued`` -> ``sending`` until ``email_claimed_until``, in a transaction
that skips rows another sender has locked), **sends** each message, and **marks** it ``sent`` at
once, under its own claim only. A sender killed midway leaves its claim to expire, and the next
one takes over what it had not marked; so a message is sent twice only if its sender died in
the moment between the mail server accepting it and the mark (and its ``Message-ID`` is the
same both times, for the receiving side to fold them). A retried task finds its rows sent.

Everything that decides whether a message still goes is checked again at send time, from the
rows as they are then: the comment must still be published (one deleted, held or shadowed after
the fan-out is not emailed), the recipient active with an address, not its author, not muting
the subject, and still wanting that kind by email (``never``: skipped; ``daily`` now: moved to
the digest).

A reader already sent ``NOTIFICATIONS_EMAIL_HOURLY_LIMIT`` emails in the last hour has the rest
moved to their daily digest (``_past_hourly_limit``): a thread of 149 replies in a minute is ten
emails and a digest, not 149 emails. The count is read from the rows (sent in the last hour,
and held by other senders' live claims), so it holds however many senders run.

A held comment's email (``held``, to its site's moderators) is checked the same way for what it
is about: the comment must still be held with its review task open, and the recipient still a
moderator of the site; it carries signed approve and reject links (``decision_links``) made
when it is sent, bound to that task.

A message that cannot be made (a header it cannot carry: an address with a line break in it) is
marked ``failed`` once and the batch goes on; names and titles in headers are made one line
first (``comments.names.one_line``), so a name can no longer be the cause.
"""

from __future__ import annotations

import logging
import smtplib
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.message import sanitize_address
from django.db import transaction
from django.db.models import Count
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from comments import rowsql
from comments.models import CommentContent, Site, Status
from comments.names import one_line
from moderation.models import ReviewTask, TaskState

from .held_email import held_item
from .models import (
    COMMENT_KINDS,
    EmailMode,
    EmailState,
    Kind,
    Notification,
    Preferences,
    Subscription,
    SubscriptionState,
    email_field,
)
from .queries import excerpt
from .unsubscribe import Scope, list_unsubscribe_headers, unsubscribe_url

log = logging.getLogger(__name__)

EMAIL_BATCH = 100  # rows claimed, checked and sent together
DIGEST_BATCH = 100  # readers whose digests are looked up together
MAX_SECONDS = 60.0  # a run stops taking batches after this long; the next run goes on

# Kinds about a comment that must still be published when the email goes (a decision is about a
# comment that may rightly be rejected or removed).
_NEEDS_PUBLISHED = (*COMMENT_KINDS, Kind.LIKE_MILESTONE)

_ROW_FIELDS = (
    "id",
    "kind",
    "event",
    "recipient_id",
    "actor_id",
    "comment_id",
    "subject_id",
    "site_id",
    "data",
    "created_at",
    "recipient__email",
    "recipient__is_active",
    "comment__status",
    "comment__author_id",
    "subject__title",
    "subject__key",
    "subject__url",
    "site__name",
    "site__key",
)


class SendFailed(Exception):
    """The mail server could not be reached or refused for now: the rest waits for the next run."""


# --- claiming --------------------------------------------------------------------------------


def _claim(*sources, batch: int | None) -> tuple[list[int], datetime]:
    """Claim rows of ``sources`` (querysets of claimable notifications, taken in turn), up to
    ``batch`` in all, for this sender until ``NOTIFICATIONS_EMAIL_CLAIM`` seconds from now; rows
    locked by another sender's claim are skipped. Returns the ids and the claim's end, which
    names the claim. Each source is read in id order, one range of an index
    (``notification_email_queue``: state, then id), however many rows wait."""
    until = timezone.now() + timedelta(seconds=settings.NOTIFICATIONS_EMAIL_CLAIM)
    ids: list[int] = []
    with transaction.atomic():
        for rows in sources:
            if batch is not None and len(ids) >= batch:
                break
            candidates = rows.select_for_update(skip_locked=True).order_by("id").values_list("id", flat=True)
            taken = list(candidates[: batch - len(ids)] if batch is not None else candidates)
            if taken:
                rows.filter(id__in=taken).update(email=EmailState.SENDING, email_claimed_until=until)
                ids += taken
    return ids, until


def _claimable() -> tuple:
    """What the sender claims: first the claims of senders that died (expired), then queued
    emails."""
    now = timezone.now()
    return (
        Notification.objects.filter(email=EmailState.SENDING, email_claimed_until__lt=now),
        Notification.objects.filter(email=EmailState.QUEUED),
    )


def _mark(ids: list[int], until: datetime, state: str) -> int:
    """Set the email state of rows still under this sender's claim (one taken over is not ours)."""
    emailed_at = timezone.now() if state == EmailState.SENT else None
    return Notification.objects.filter(id__in=ids, email=EmailState.SENDING, email_claimed_until=until).update(
        email=state,
        email_claimed_until=None,
        emailed_at=emailed_at,
    )


# --- deciding, at send time -------------------------------------------------------------------


@dataclass
class _Batch:
    rows: list[dict]
    preferences: dict[int, Preferences]
    muted: set[tuple[int, int]]
    bodies: dict[int, str] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    waiting: dict[int, list[str]] = field(default_factory=dict)  # site id: excerpts atop its review queue
    held: dict[int, tuple[int, list[str]]] = field(default_factory=dict)  # comment id: its open task, reasons
    moderating: set[tuple[int, int]] = field(default_factory=set)  # (site id, user id) of held rows


QUEUE_SHOWN = 5  # comments of the review queue a moderator's email quotes


def _waiting(site_ids: set[int]) -> dict[int, list[str]]:
    """The excerpts of the first ``QUEUE_SHOWN`` comments of each site's open review queue, in
    the queue's order (priority, then age): two queries per site, and only for the rare
    ``queue`` emails."""
    found = {}
    for site_id in site_ids:
        ids = list(
            ReviewTask.objects.filter(site_id=site_id, state=TaskState.OPEN)
            .order_by("-priority", "id")
            .values_list("comment_id", flat=True)[:QUEUE_SHOWN]
        )
        bodies = dict(CommentContent.objects.filter(pk__in=ids).values_list("pk", "body"))
        found[site_id] = [excerpt(bodies[pk], length=120) for pk in ids if pk in bodies]
    return found


def _load(ids: list[int], until: datetime) -> _Batch:
    """The claimed rows with all a decision and a message need: five queries for any number."""
    rows = list(
        Notification.objects.filter(id__in=ids, email=EmailState.SENDING, email_claimed_until=until)
        .order_by("id")
        .values(*_ROW_FIELDS)
    )
    recipients = {r["recipient_id"] for r in rows}
    subjects = {r["subject_id"] for r in rows if r["subject_id"]}
    preferences = Preferences.objects.in_bulk(recipients)
    muted = (
        set(
            Subscription.objects.filter(
                user_id__in=recipients, subject_id__in=subjects, state=SubscriptionState.MUTED
            ).values_list("user_id", "subject_id")
        )
        if subjects
        else set()
    )
    batch = _Batch(rows=rows, preferences=preferences, muted=muted)
    comments = {r["comment_id"] for r in rows if r["comment_id"]}
    batch.bodies = dict(CommentContent.objects.filter(pk__in=comments).values_list("pk", "body")) if comments else {}
    faces = rowsql.user_faces({r["actor_id"] for r in rows if r["actor_id"]})
    batch.names = {pk: face.display_name or face.username for pk, face in faces.items()}
    batch.waiting = _waiting({r["site_id"] for r in rows if r["kind"] == Kind.QUEUE and r["site_id"]})
    held = [r for r in rows if r["kind"] == Kind.HELD and r["comment_id"] and r["site_id"]]
    if held:
        tasks = ReviewTask.objects.filter(
            comment_id__in={r["comment_id"] for r in held},
            subject_id__in={r["subject_id"] for r in held},  # the tasks' shards, on Citus
            state=TaskState.OPEN,
        )
        batch.held = {c: (t, reasons) for t, c, reasons in tasks.values_list("id", "comment_id", "reasons")}
        batch.moderating = set(
            Site.moderators.through.objects.filter(
                site_id__in={r["site_id"] for r in held}, user_id__in={r["recipient_id"] for r in held}
            ).values_list("site_id", "user_id")
        )
    return batch


def _preferences(batch: _Batch, user_id: int) -> Preferences:
    return batch.preferences.get(user_id) or Preferences(user_id=user_id)


SEND, TO_DIGEST, SKIP = "send", "digest", "skip"


def _decide(row: dict, batch: _Batch, *, digest: bool) -> str:
    """Whether a claimed row is sent now, waits for the digest, or is not emailed at all."""
    recipient = row["recipient_id"]
    if not row["recipient__is_active"] or not row["recipient__email"]:
        return SKIP
    if row["comment_id"] and row["comment__status"] is None:  # the comment is gone
        return SKIP
    if row["kind"] in _NEEDS_PUBLISHED and row["comment__status"] != Status.PUBLISHED:
        return SKIP
    if row["kind"] == Kind.HELD and (
        row["comment__status"] != Status.PENDING
        or row["comment_id"] not in batch.held
        or (row["site_id"], recipient) not in batch.moderating
    ):
        return SKIP  # decided meanwhile, or no longer theirs to decide
    if recipient in (row["actor_id"], row["comment__author_id"]) and row["kind"] in COMMENT_KINDS:
        return SKIP  # never to the author about themself
    if row["subject_id"] and (recipient, row["subject_id"]) in batch.muted and row["kind"] != Kind.HELD:
        return SKIP
    mode = getattr(_preferences(batch, recipient), email_field(row["kind"]))
    if mode == EmailMode.NEVER:
        return SKIP
    if mode == EmailMode.DAILY and not digest:
        return TO_DIGEST
    return SEND


# --- the messages ---------------------------------------------------------------------------


def _item(row: dict, batch: _Batch) -> dict:
    """One notification as a message shows it (in the active language)."""
    data = row["data"] or {}
    title = row["subject__title"] or row["subject__key"] or ""
    values = {
        "actor": batch.names.get(row["actor_id"], _("Someone")),
        "title": title,
        "likes": data.get("likes", 0),
        "open": data.get("open", 0),
        "new": data.get("new", 0),
        "site": row["site__name"] or data.get("site", ""),
    }
    kind = row["kind"]
    if kind == Kind.REPLY:
        headline = _("%(actor)s replied to your comment on “%(title)s”") % values
    elif kind == Kind.MENTION:
        headline = _("%(actor)s mentioned you on “%(title)s”") % values
    elif kind == Kind.SUBSCRIPTION:
        headline = _("%(actor)s commented on “%(title)s”, which you follow") % values
    elif kind == Kind.LIKE_MILESTONE:
        headline = (
            ngettext(
                "Your comment on “%(title)s” reached %(likes)d like",
                "Your comment on “%(title)s” reached %(likes)d likes",
                values["likes"],
            )
            % values
        )
    elif kind == Kind.DECISION:
        decision = data.get("decision")
        if decision == "approved":
            headline = _("Your comment on “%(title)s” was approved") % values
        elif decision == "rejected":
            headline = _("Your comment on “%(title)s” was rejected") % values
        else:
            headline = _("Your comment on “%(title)s” was removed") % values
    elif kind == Kind.HELD:
        headline = _("A comment on “%(title)s” waits for your decision (%(site)s)") % values
    else:  # the review queue
        headline = (
            ngettext(
                "%(open)d comment waits for review on %(site)s",
                "%(open)d comments wait for review on %(site)s",
                values["open"],
            )
            % values
        )
    url = row["subject__url"] or ""
    if kind == Kind.HELD:
        task_id, reasons = batch.held[row["comment_id"]]
        shown = held_item(row=row, task_id=task_id, reasons=reasons, body=batch.bodies.get(row["comment_id"], ""))
        return {
            "kind": kind,
            "headline": headline,
            "excerpt": "",
            "new": None,
            "waiting": [],
            "author": values["actor"],
            **shown,
        }
    if kind == Kind.QUEUE:
        url = f"{settings.NOTIFICATIONS_BASE_URL}/console/"
    elif not url.startswith(("https://", "http://")):  # a link in an email goes nowhere else
        url = settings.NOTIFICATIONS_BASE_URL
    elif row["comment_id"] and not (kind == Kind.DECISION and data.get("decision") != "approved"):
        # The widget opens the comment the page's address names (docs/embedding.md); a
        # rejected or removed comment is not on the page.
        url = f"{url.split('#')[0]}#comment-{row['comment_id']}"
    return {
        "kind": kind,
        "headline": headline,
        "excerpt": excerpt(batch.bodies.get(row["comment_id"], "")) if kind in COMMENT_KINDS else "",
        "url": url,
        "new": values["new"] if kind == Kind.QUEUE else None,
        "waiting": batch.waiting.get(row["site_id"], []) if kind == Kind.QUEUE else [],
    }


def _scope(rows: list[dict]) -> Scope:
    """What a message's unsubscribe link turns off: a new comment in a followed subject, that
    subject's thread; anything else, the kinds the message is about."""
    first = rows[0]
    if len(rows) == 1 and first["kind"] == Kind.SUBSCRIPTION and first["subject_id"]:
        return Scope(user_id=first["recipient_id"], subject_id=first["subject_id"])
    kinds = tuple(dict.fromkeys(r["kind"] for r in rows))
    return Scope(user_id=first["recipient_id"], kinds=kinds)


def _mail_host() -> str:
    return urlsplit(settings.NOTIFICATIONS_BASE_URL).hostname or "localhost"


def _message(rows: list[dict], batch: _Batch, *, digest: bool, connection) -> EmailMultiAlternatives:
    """The message for one recipient's rows (one row, or a digest's), in their language, with
    plain-text and HTML parts and the one-click unsubscribe headers."""
    first = rows[0]
    language = _preferences(batch, first["recipient_id"]).language
    scope = _scope(rows)
    with translation.override(language):
        items = [_item(r, batch) for r in rows]
        if digest:
            subject = ngettext(
                "Your daily digest: %(count)d notification",
                "Your daily digest: %(count)d notifications",
                len(items),
            ) % {"count": len(items)}
        else:
            subject = items[0]["headline"]
        # A header is one line: the headline holds an author's name and a subject's title, both
        # from outside (and names stored before they were cleaned at input).
        subject = one_line(subject)
        if scope.subject_id is not None:
            what = _("Stop emails about “%(title)s”") % {"title": first["subject__title"] or first["subject__key"]}
        elif digest:
            what = _("Stop these emails")
        else:
            what = _("Stop emails like this one")
        context = {
            "subject": subject,
            "items": items,
            "digest": digest,
            "unsubscribe_url": unsubscribe_url(scope),
            "unsubscribe_label": what,
            "language": language,
        }
        text = render_to_string("notifications/email/message.txt", context)
        html = render_to_string("notifications/email/message.html", context)
    headers = list_unsubscribe_headers(scope)
    if digest:
        headers["Message-ID"] = f"<digest.{first['recipient_id']}.{rows[0]['id']}.{rows[-1]['id']}@{_mail_host()}>"
    else:
        headers["Message-ID"] = f"<notification.{first['id']}@{_mail_host()}>"
    headers["Auto-Submitted"] = "auto-generated"
    message = EmailMultiAlternatives(
        subject=subject,
        body=text,
        to=[first["recipient__email"]],
        headers=headers,
        connection=connection,
    )
    message.attach_alternative(html, "text/html")
    return message


def _made(message: EmailMultiAlternatives) -> EmailMultiAlternatives:
    """``message`` once it is known to be sendable: its MIME form made and its recipients'
    addresses read as the SMTP backend reads them. Raises ``ValueError`` (``BadHeaderError``
    among them) for one that never will be, whichever the backend, so it is told apart from a
    mail server's failure, which the next run retries. (The sender's address is not read here:
    it is the service's setting, not the row's, and one the backend refuses is left to raise at
    every run, failing no row, until it is fixed.)"""
    encoding = message.encoding or settings.DEFAULT_CHARSET
    for address in message.recipients():
        sanitize_address(address, encoding)
    message.message()
    return message


def _deliver(message: EmailMultiAlternatives) -> None:
    try:
        message.send()
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(str(exc)) from exc


# --- the senders ----------------------------------------------------------------------------


def _emailed_lately(recipients: set[int], until: datetime) -> dict[int, int]:
    """Per recipient, the notification emails sent them in the last hour (a digest's rows share
    their ``emailed_at``: one email), plus the rows other senders' live claims hold, which they
    may be sending now: so two senders never both take the last of a recipient's allowance.
    Two queries, each on its partial index (``notification_emailed``, ``notification_email_queue``),
    rather than one whose OR the planner may answer with a scan of each recipient's history."""
    now = timezone.now()
    counted: dict[int, int] = dict(
        Notification.objects.filter(
            recipient_id__in=recipients, email=EmailState.SENT, emailed_at__gte=now - timedelta(hours=1)
        )
        .values("recipient_id")
        .annotate(n=Count("emailed_at", distinct=True))
        .values_list("recipient_id", "n")
    )
    held = (
        Notification.objects.filter(email=EmailState.SENDING, email_claimed_until__gt=now, recipient_id__in=recipients)
        .exclude(email_claimed_until=until)
        .values("recipient_id")
        .annotate(n=Count("id"))
        .values_list("recipient_id", "n")
    )
    for recipient, n in held:
        counted[recipient] = counted.get(recipient, 0) + n
    return counted


def _past_hourly_limit(rows: list[dict], until: datetime) -> list[dict]:
    """The rows (of those to send now, in id order) that would take their recipient past
    ``NOTIFICATIONS_EMAIL_HOURLY_LIMIT`` emails in the last hour: they wait for the digest."""
    limit = settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT
    if limit <= 0 or not rows:
        return []
    counted = _emailed_lately({r["recipient_id"] for r in rows}, until)
    past = []
    for row in rows:
        recipient = row["recipient_id"]
        if counted.get(recipient, 0) >= limit:
            past.append(row)
        else:
            counted[recipient] = counted.get(recipient, 0) + 1
    return past


def _settle_decisions(batch: _Batch, until: datetime, *, digest: bool) -> list[dict]:
    """Mark what is not to be sent (skipped, or moved to the digest); returns the rows to send."""
    decided: dict[str, list[dict]] = {SEND: [], TO_DIGEST: [], SKIP: []}
    for row in batch.rows:
        decided[_decide(row, batch, digest=digest)].append(row)
    if not digest:
        past = _past_hourly_limit(decided[SEND], until)
        if past:
            waiting = {r["id"] for r in past}
            decided[SEND] = [r for r in decided[SEND] if r["id"] not in waiting]
            decided[TO_DIGEST] += past
    if decided[SKIP]:
        _mark([r["id"] for r in decided[SKIP]], until, EmailState.SKIPPED)
    if decided[TO_DIGEST]:
        _mark([r["id"] for r in decided[TO_DIGEST]], until, EmailState.DIGEST)
    return decided[SEND]


def _fail(rows: list[dict], until: datetime, exc: ValueError) -> None:
    """Mark rows whose message cannot be made ``failed``: once, where retrying would fail the
    same way at every run, and hold up nobody else's email."""
    log.error("notification emails: rows %s cannot be sent (%s); marked failed", [r["id"] for r in rows], exc)
    _mark([r["id"] for r in rows], until, EmailState.FAILED)


def emails_send(*, batch: int = EMAIL_BATCH, max_seconds: float = MAX_SECONDS) -> int:
    """Send the queued emails (and those of senders that died), a claimed batch at a time,
    until none is left or ``max_seconds`` have passed. Returns how many messages were sent. A
    mail server that fails leaves the rest queued for the next run."""
    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < max_seconds:
        ids, until = _claim(*_claimable(), batch=batch)
        if not ids:
            break
        loaded = _load(ids, until)
        to_send = _settle_decisions(loaded, until, digest=False)
        try:
            with get_connection() as connection:
                for row in to_send:
                    try:
                        message = _made(_message([row], loaded, digest=False, connection=connection))
                    except ValueError as exc:
                        _fail([row], until, exc)
                        continue
                    _deliver(message)
                    sent += _mark([row["id"]], until, EmailState.SENT)
        except (SendFailed, smtplib.SMTPException, OSError) as exc:
            log.warning("notification emails: the mail server failed (%s); the rest waits for the next run", exc)
            _mark(ids, until, EmailState.QUEUED)  # what this claim did not mark goes back to the queue
            break
        if len(ids) < batch:
            break
    return sent


def digests_send(*, max_seconds: float = MAX_SECONDS) -> int:
    """Send each reader their daily digest: every ``digest`` row of theirs written before this
    run, as one message (claimed, sent and marked like a single email). Returns how many
    digests were sent; a reader whose rows another sender holds is left to it."""
    sent = 0
    started = time.monotonic()
    cutoff = timezone.now()
    after = 0
    while time.monotonic() - started < max_seconds:
        readers = list(
            Notification.objects.filter(email=EmailState.DIGEST, created_at__lte=cutoff, recipient_id__gt=after)
            .order_by("recipient_id")
            .values_list("recipient_id", flat=True)
            .distinct()[:DIGEST_BATCH]
        )
        if not readers:
            break
        for reader in readers:
            after = reader
            waiting = Notification.objects.filter(recipient_id=reader, email=EmailState.DIGEST, created_at__lte=cutoff)
            ids, until = _claim(waiting, batch=None)
            if not ids:
                continue
            loaded = _load(ids, until)
            to_send = _settle_decisions(loaded, until, digest=True)
            if not to_send:
                continue
            try:
                message = _made(_message(to_send, loaded, digest=True, connection=None))
            except ValueError as exc:
                _fail(to_send, until, exc)
                continue
            try:
                _deliver(message)
            except SendFailed as exc:
                log.warning("notification digests: the mail server failed (%s); the rest waits for the next run", exc)
                _mark(ids, until, EmailState.DIGEST)
                return sent
            _mark([r["id"] for r in to_send], until, EmailState.SENT)
            sent += 1
    return sent
