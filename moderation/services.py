"""Every write of the moderation app: the word list, sanctions, reports, review tasks and their
claims. Decisions on comments are action objects (``actions.py``) built on these."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from comments.exceptions import Banned, InvalidInput, NotFound, PermissionDenied
from comments.models import Comment, Site, Status, User
from comments.queries import CommentRef, check_acts_on_site, is_site_moderator
from comments.services import check_subject_open, comment_lock, comment_set_status

from . import signals, words
from .models import AuditEntry, Report, ReviewTask, Sanction, SanctionKind, TaskState, WordAction, WordEntry
from .queries import SANCTIONS, standing_of
from .wordfilter import normalize_word


def participation_check(site_id: int, user_id: int) -> None:
    """Refuse a banned user's likes and reports (registered as the core's participation check)."""
    if "ban" in standing_of(site_id=site_id, user_id=user_id):
        raise Banned()


def audit_write(
    *,
    site_id: int | None,
    actor: User | None,
    action: str,
    comment_id: int | None = None,
    from_status: str | None = None,
    to_status: str | None = None,
    reason: str = "",
    channel: str = "",
) -> AuditEntry:
    """Append one audit entry; call inside the transaction that makes the change."""
    return AuditEntry.objects.create(
        site_id=site_id,
        actor=actor,
        action=action,
        comment_id=comment_id,
        from_status=from_status,
        to_status=to_status,
        reason=reason[:1000],
        channel=channel,
    )


def _require_moderator(actor: User, site: Site | None) -> None:
    if site is None:
        if not actor.is_staff:
            raise PermissionDenied("Only staff may change the list of every site.")
    elif not is_site_moderator(user=actor, site=site):
        raise PermissionDenied("Only moderators of this site may do that.")


# --- the word list -------------------------------------------------------------------------


def word_create(*, actor: User, site: Site | None, word: str, action: str, inside_words: bool = False) -> WordEntry:
    """Add a word to a site's list (``site`` None: every site's, staff only). The change
    reaches every process within ``MODERATION_WORDS_RECHECK`` seconds."""
    _require_moderator(actor, site)
    if action not in WordAction.values:
        raise InvalidInput("Unknown action.", fields={"action": [f"Must be one of {WordAction.values}."]})
    normalized = normalize_word(word)
    if not normalized:
        raise InvalidInput("The word has no letters to match.", fields={"word": ["The word has no letters to match."]})
    if len(normalized) > WordEntry._meta.get_field("normalized").max_length:  # type: ignore[operator]  # it has one
        # A few characters expand a lot under NFKC (U+FDFA is 18 letters).
        raise InvalidInput("The word is too long once normalized.", fields={"word": ["Too long once normalized."]})
    try:
        with transaction.atomic():
            entry = WordEntry.objects.create(
                site=site,
                word=word.strip(),
                normalized=normalized,
                action=action,
                inside_words=inside_words,
                created_by=actor,
            )
            audit_write(
                site_id=site.pk if site else None, actor=actor, action="word_add", reason=f"{word.strip()} ({action})"
            )
            transaction.on_commit(lambda: _word_list_changed(site.pk if site else None, rescan=True))
    except IntegrityError:
        raise InvalidInput("This word is already in the list.", fields={"word": ["Already in the list."]}) from None
    return entry


def word_delete(*, actor: User, entry: WordEntry) -> None:
    _require_moderator(actor, entry.site)
    with transaction.atomic():
        audit_write(site_id=entry.site_id, actor=actor, action="word_remove", reason=f"{entry.word} ({entry.action})")
        entry.delete()
        transaction.on_commit(lambda: _word_list_changed(entry.site_id, rescan=False))


def _word_list_changed(site_id: int | None, *, rescan: bool) -> None:
    """Every process drops its automatons; a new word also re-scans the recent comments (by
    ``receivers.word_added``, which hands it to a task)."""
    words.word_list_changed()
    if rescan:
        signals.word_added.send(sender=WordEntry, site_id=site_id)


# --- sanctions -----------------------------------------------------------------------------


def sanction_create(
    *, actor: User, site: Site, user_id: int, kind: str, until: datetime | None = None, reason: str = ""
) -> Sanction:
    _require_moderator(actor, site)
    if kind not in SanctionKind.values:
        raise InvalidInput("Unknown kind.", fields={"kind": [f"Must be one of {SanctionKind.values}."]})
    if until is not None and until <= timezone.now():
        raise InvalidInput("until is in the past.", fields={"until": ["Must be in the future."]})
    if not User.objects.filter(pk=user_id).exists():
        raise NotFound("Unknown user.")
    if user_id == actor.pk:
        raise InvalidInput("You cannot sanction yourself.", fields={"user_id": ["You cannot sanction yourself."]})
    with transaction.atomic():
        sanction = Sanction.objects.create(
            site=site, user_id=user_id, kind=kind, until=until, reason=reason[:500], created_by=actor
        )
        audit_write(site_id=site.pk, actor=actor, action=f"sanction_{kind}", reason=f"user {user_id}: {reason}"[:1000])
        transaction.on_commit(SANCTIONS.changed)
    return sanction


def sanction_delete(*, actor: User, sanction: Sanction) -> None:
    _require_moderator(actor, sanction.site)
    with transaction.atomic():
        audit_write(
            site_id=sanction.site_id,
            actor=actor,
            action=f"sanction_{sanction.kind}_lifted",
            reason=f"user {sanction.user_id}",
        )
        sanction.delete()
        transaction.on_commit(SANCTIONS.changed)


# --- review tasks --------------------------------------------------------------------------


def review_task_priority(*, reasons: list[str], reporters: int, author_trusted: bool) -> int:
    """How urgent a task is: each distinct reporter weighs most, then what the filters found;
    a trusted author's comment sinks. (Documented in docs/operations.md, "Moderation".)"""
    priority = 20 * reporters
    priority += 10 * sum(1 for r in reasons if r.startswith("word:"))
    priority += 5 * sum(1 for r in reasons if r.startswith("spam:"))
    priority += 1 if "policy:pre" in reasons else 0
    return priority - (30 if author_trusted else 0)


def review_task_open(*, comment_id: int, reasons: list[str]) -> ReviewTask | None:
    """Open a review task for the comment, or add the reasons to its open one, and set its
    priority. None if the comment is gone.

    A comment's first open task is one ``INSERT`` with its priority: the common case is a
    comment held as it is posted, and this runs on that request's commit. Only when an open
    task exists does it take the task's row lock and merge the reasons."""
    place = Comment.objects.filter(pk=comment_id).values_list("author_id", "subject_id", "subject__site_id").first()
    if place is None:
        return None
    author_id, subject_id, site_id = place
    trusted = author_id is not None and "trust" in standing_of(site_id=site_id, user_id=author_id)
    reasons = list(dict.fromkeys(reasons))
    with transaction.atomic():
        reporters = Report.objects.filter(comment_id=comment_id, subject_id=subject_id).count()
        for _ in range(3):  # again only if the open task was closed between the two steps
            priority = review_task_priority(reasons=reasons, reporters=reporters, author_trusted=trusted)
            task = _insert_open_task(
                comment_id=comment_id, subject_id=subject_id, site_id=site_id, reasons=reasons, priority=priority
            )
            if task is not None:
                return task
            task = (
                ReviewTask.objects.select_for_update()
                .filter(comment_id=comment_id, subject_id=subject_id, state=TaskState.OPEN)
                .first()
            )
            if task is not None:
                task.reasons = list(dict.fromkeys([*task.reasons, *reasons]))
                task.priority = review_task_priority(reasons=task.reasons, reporters=reporters, author_trusted=trusted)
                task.save(update_fields=["reasons", "priority"])
                return task
    raise RuntimeError(f"comment {comment_id}: an open review task could be neither inserted nor found")


_TASK_TABLE = connection.ops.quote_name(ReviewTask._meta.db_table)


def _insert_open_task(
    *, comment_id: int, subject_id: int, site_id: int, reasons: list[str], priority: int
) -> ReviewTask | None:
    """Insert the comment's open task unless it has one (the partial unique index decides,
    so concurrent openers cannot both insert); None when it has one."""
    now = timezone.now()
    as_json = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_TASK_TABLE} (comment_id, subject_id, site_id, reasons, priority, state, decision, created_at) "
            f"VALUES (%s, %s, %s, {as_json}, %s, %s, '', %s) "
            f"ON CONFLICT (comment_id, subject_id) WHERE state = '{TaskState.OPEN}' DO NOTHING RETURNING id",
            [
                comment_id,
                subject_id,
                site_id,
                json.dumps(reasons),
                priority,
                TaskState.OPEN,
                connection.ops.adapt_datetimefield_value(now),
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    task = ReviewTask(
        id=row[0],
        comment_id=comment_id,
        subject_id=subject_id,
        site_id=site_id,
        reasons=reasons,
        priority=priority,
        state=TaskState.OPEN,
        decision="",
        created_at=now,
    )
    task._state.adding, task._state.db = False, connection.alias
    return task


def review_task_claim(*, task_id: int, moderator: User) -> ReviewTask:
    """Claim an open task for ``MODERATION_CLAIM_SECONDS``; refused while another moderator's
    claim runs. One statement, so two moderators never both win."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.MODERATION_CLAIM_SECONDS)
    task = ReviewTask.objects.select_related("site").filter(pk=task_id).first()
    if task is None:
        raise NotFound("Unknown task.")
    _require_moderator(moderator, task.site)
    won = ReviewTask.objects.filter(
        Q(claimed_by__isnull=True) | Q(claim_expires_at__lte=now) | Q(claimed_by=moderator),
        pk=task_id,
        state=TaskState.OPEN,
    ).update(claimed_by=moderator, claim_expires_at=lease)
    if not won:
        raise PermissionDenied("Another moderator is working on this task.")
    task.refresh_from_db()
    return task


def review_task_release(*, task_id: int, moderator: User) -> None:
    ReviewTask.objects.filter(pk=task_id, claimed_by=moderator, state=TaskState.OPEN).update(
        claimed_by=None, claim_expires_at=None
    )


def review_task_claims_expire() -> int:
    """Free the claims whose lease ran out (the queue also ignores them; this keeps the rows
    tidy)."""
    return ReviewTask.objects.filter(state=TaskState.OPEN, claim_expires_at__lte=timezone.now()).update(
        claimed_by=None, claim_expires_at=None
    )


def review_tasks_close(*, comment_id: int, subject_id: int, actor: User | None, decision: str) -> int:
    """Close every open task of the comment; call inside the decision's transaction."""
    return ReviewTask.objects.filter(comment_id=comment_id, subject_id=subject_id, state=TaskState.OPEN).update(
        state=TaskState.DONE,
        decided_by=actor,
        decision=decision,
        decided_at=timezone.now(),
        claimed_by=None,
        claim_expires_at=None,
    )


def comment_hold(*, comment_id: int, site_id: int, why: str) -> bool:
    """Hold a published comment for review (``pending``) without a moderator's decision, as
    the system: for reports past the threshold and ``block`` words found later. Audited;
    a no-op (False) when it is not published."""
    with transaction.atomic():
        try:
            comment = comment_lock(comment_id)
        except NotFound:
            return False
        if comment.status != Status.PUBLISHED:  # as it is now, locked: not as it was read
            return False
        _, from_status = comment_set_status(comment_id=comment_id, to_status=Status.PENDING)
        audit_write(
            site_id=site_id,
            actor=None,
            action="hold",
            comment_id=comment_id,
            from_status=from_status,
            to_status=Status.PENDING,
            reason=why,
        )
    return True


# --- reports -------------------------------------------------------------------------------


def report_create(*, comment: CommentRef, reporter: User, reason: str, detail: str = "") -> tuple[Report, bool]:
    """Report a comment (one report per user per comment; a repeat returns the first). When
    the distinct reporters reach the site's threshold, a published comment is held
    (``pending``) and its task rises in the queue. ``comment``: a ``CommentRef`` the reporter
    may see."""
    if comment.status in (Status.DELETED, Status.REJECTED):
        raise NotFound("Unknown comment.")
    check_acts_on_site(user=reporter, site=comment.site_id)
    participation_check(comment.site_id, reporter.pk)
    check_subject_open(subject_state=comment.subject_state, site_id=comment.site_id, user=reporter)
    existing = Report.objects.filter(comment_id=comment.pk, user=reporter, subject_id=comment.subject_id).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            report = Report.objects.create(
                comment_id=comment.pk, user=reporter, subject_id=comment.subject_id, reason=reason, detail=detail[:1000]
            )
            transaction.on_commit(lambda: signals.report_created.send(sender=Report, report_id=report.pk))
    except IntegrityError:
        return Report.objects.get(comment_id=comment.pk, user=reporter, subject_id=comment.subject_id), False
    reporters = Report.objects.filter(comment_id=comment.pk, subject_id=comment.subject_id).count()
    threshold = Site.objects.filter(pk=comment.site_id).values_list("report_threshold", flat=True).first() or 0
    if comment.status == Status.PUBLISHED and reporters >= threshold:
        comment_hold(comment_id=comment.pk, site_id=comment.site_id, why=f"{reporters} reports")
    review_task_open(comment_id=comment.pk, reasons=[f"report:{reason}"])
    return report, True


def reports_dismiss(*, comment_id: int, subject_id: int) -> Counter[str]:
    """Remove a comment's reports, found unfounded by a moderator, so they count towards no
    threshold and no task's priority again (a reader may report it anew); returns how many
    there were of each reason, for the audit entry. Call inside the decision's transaction
    (``actions``)."""
    reports = Report.objects.filter(comment_id=comment_id, subject_id=subject_id)
    reasons = Counter(reports.values_list("reason", flat=True))
    reports.delete()
    return reasons


def review_task_claim_check(*, comment_id: int, subject_id: int, moderator: User) -> None:
    """Refuse a moderator's action on a comment whose open review task another moderator
    holds (a claim still running), so two moderators never work one task: every moderation
    action checks it (``actions.ModerationAction.check``). The holder's own actions and
    unclaimed or lapsed tasks pass."""
    holder = (
        ReviewTask.objects.filter(
            comment_id=comment_id, subject_id=subject_id, state=TaskState.OPEN, claim_expires_at__gt=timezone.now()
        )
        .exclude(claimed_by__isnull=True)
        .exclude(claimed_by=moderator)
        .select_related("claimed_by")
        .first()
    )
    if holder is not None:
        raise PermissionDenied(f"{holder.claimed_by.public_name} is working on this task.")  # type: ignore[union-attr]  # not null here
