"""Moderator decisions on a comment, as action objects: ``check()`` says whether the action
may be taken, ``execute()`` locks the comment, checks, takes the action, closes the comment's
open review tasks and writes exactly one audit entry, all in one transaction. Status changes go
through the core's one transition (``comment_set_status``), flags through ``comment_set_flags``, so
counters, placeholders and visibility stay right. ``top_comments_feature`` is the one decision taken
by the system on a schedule.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy, ngettext_lazy

from comments.exceptions import CommentsError, InvalidInput, NotFound, PermissionDenied
from comments.ids import id_floor_at
from comments.models import GONE_STATUSES, Comment, Status, User
from comments.queries import is_site_moderator
from comments.services import comment_lock, comment_set_flags, comment_set_status

from .models import AuditEntry, ReviewTask, TaskState
from .services import audit_write, reports_dismiss, review_task_claim_check, review_tasks_close

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


class AlreadyDecided(CommentsError):
    """The decision was asked for a review task that is closed: the comment was decided
    meanwhile (by anyone, any way), so this decision is not taken."""

    code = "already_decided"
    status = 409
    default_message = "This comment was already decided."


class ModerationAction:
    name = ""
    label: StrOrPromise = ""  # what the console calls it
    in_bulk = True  # offered for many comments at once in the console's queue
    done: StrOrPromise  # what the console says was done: ngettext_lazy(..., "n") % {"n": how many comments}

    def __init__(
        self,
        *,
        comment: Comment,
        actor: User | None,
        reason: str = "",
        channel: str = "",
        if_task_open: int | None = None,
    ):
        self.comment = comment
        self.actor = actor
        self.reason = reason
        self.channel = channel
        self.if_task_open = if_task_open

    def check(self) -> None:
        """``actor`` None is the system (a scheduled job), allowed everything a moderator is.
        A moderator may not act on a comment whose review task another moderator has claimed
        (the console, the API and the admin alike)."""
        if self.actor is None:
            return
        if not is_site_moderator(user=self.actor, site=self.comment.subject.site):
            raise PermissionDenied("Only moderators of this site may do that.")
        review_task_claim_check(comment_id=self.comment.pk, subject_id=self.comment.subject_id, moderator=self.actor)
        if (
            self.if_task_open is not None
            and not ReviewTask.objects.filter(
                pk=self.if_task_open,
                comment_id=self.comment.pk,
                subject_id=self.comment.subject_id,
                state=TaskState.OPEN,
            ).exists()
        ):
            # Checked with the comment locked: every decision closes its tasks under that lock,
            # so of two decisions racing on one task only the first finds it open.
            raise AlreadyDecided()

    def change(self) -> tuple[str | None, str | None]:
        """Make the change; returns the status before and after (None for flag changes)."""
        raise NotImplementedError

    def execute(self) -> Comment:
        # Lock, then check, then change: the comment may have changed since it was read (its
        # author deleted it, another moderator decided), and the check is about the row the
        # action changes.
        with transaction.atomic():
            self.comment = comment_lock(self.comment.pk)
            self.check()
            from_status, to_status = self.change()
            review_tasks_close(
                comment_id=self.comment.pk, subject_id=self.comment.subject_id, actor=self.actor, decision=self.name
            )
            audit_write(
                site_id=self.comment.subject.site_id,
                actor=self.actor,
                action=self.name,
                comment_id=self.comment.pk,
                from_status=from_status,
                to_status=to_status,
                reason=self.reason,
                channel=self.channel,
            )
        return self.comment


class StatusAction(ModerationAction):
    to_status = ""
    allowed_from: tuple[str, ...] = tuple(Status.values)

    def check(self) -> None:
        super().check()
        if self.comment.status not in self.allowed_from:
            raise InvalidInput(f"A {self.comment.status} comment cannot be given '{self.name}'.")

    def change(self):
        comment, from_status = comment_set_status(
            comment_id=self.comment.pk, to_status=self.to_status, actor=self.actor
        )
        self.comment.status, self.comment.pinned, self.comment.featured = (
            comment.status,
            comment.pinned,
            comment.featured,
        )
        return from_status, comment.status


class Approve(StatusAction):
    name, to_status, label = "approve", Status.PUBLISHED, gettext_lazy("Approve")
    done = ngettext_lazy("Approved %(n)d comment.", "Approved %(n)d comments.", "n")
    allowed_from = (Status.PUBLISHED, Status.PENDING, Status.SHADOW)


class Reject(StatusAction):
    name, to_status, label = "reject", Status.REJECTED, gettext_lazy("Reject")
    done = ngettext_lazy("Rejected %(n)d comment.", "Rejected %(n)d comments.", "n")
    allowed_from = (Status.PUBLISHED, Status.PENDING, Status.SHADOW, Status.REJECTED)


class Delete(StatusAction):
    name, to_status, label = "delete", Status.DELETED, gettext_lazy("Delete")
    done = ngettext_lazy("Deleted %(n)d comment.", "Deleted %(n)d comments.", "n")


class Restore(StatusAction):
    name, to_status, label = "restore", Status.PUBLISHED, gettext_lazy("Restore")
    done = ngettext_lazy("Restored %(n)d comment.", "Restored %(n)d comments.", "n")
    allowed_from = GONE_STATUSES


class Shadow(StatusAction):
    name, to_status, label = "shadow", Status.SHADOW, gettext_lazy("Shadow")
    done = ngettext_lazy("Shadowed %(n)d comment.", "Shadowed %(n)d comments.", "n")
    allowed_from = (Status.PUBLISHED, Status.PENDING, Status.SHADOW)


class FlagAction(ModerationAction):
    flag = ""
    value = True

    def change(self):
        comment, _ = comment_set_flags(comment_id=self.comment.pk, **{self.flag: self.value})
        setattr(self.comment, self.flag, getattr(comment, self.flag))
        return None, None


class Pin(FlagAction):
    name, flag, value, label = "pin", "pinned", True, gettext_lazy("Pin")
    done = ngettext_lazy("Pinned %(n)d comment.", "Pinned %(n)d comments.", "n")


class Unpin(FlagAction):
    name, flag, value, label = "unpin", "pinned", False, gettext_lazy("Unpin")
    done = ngettext_lazy("Unpinned %(n)d comment.", "Unpinned %(n)d comments.", "n")


class Feature(FlagAction):
    name, flag, value, label = "feature", "featured", True, gettext_lazy("Feature")
    done = ngettext_lazy("Featured %(n)d comment.", "Featured %(n)d comments.", "n")


class Unfeature(FlagAction):
    name, flag, value, label = "unfeature", "featured", False, gettext_lazy("Unfeature")
    done = ngettext_lazy("Unfeatured %(n)d comment.", "Unfeatured %(n)d comments.", "n")


class DismissReports(ModerationAction):
    """A published comment's reports found unfounded: they go, the comment stays as it is, and
    the audit entry says how many there were and what they said."""

    name, in_bulk = "dismiss", False
    done = ngettext_lazy("Dismissed the reports of %(n)d comment.", "Dismissed the reports of %(n)d comments.", "n")

    def check(self) -> None:
        super().check()
        if self.comment.status != Status.PUBLISHED:
            raise InvalidInput(
                f"Only a published comment's reports can be dismissed; this one is {self.comment.status}."
            )

    def change(self):
        reasons = reports_dismiss(comment_id=self.comment.pk, subject_id=self.comment.subject_id)
        if not reasons:
            raise InvalidInput("The comment has no reports to dismiss.")
        dismissed = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        self.reason = "; ".join(filter(None, [self.reason, f"reports dismissed: {dismissed}"]))
        return None, None


ACTIONS: dict[str, type[ModerationAction]] = {
    cls.name: cls for cls in (Approve, Reject, Delete, Pin, Feature, Unpin, Unfeature, Restore, Shadow, DismissReports)
}
# The console's bulk menu, in this order: (name, label).
BULK_ACTIONS = [(name, cls.label) for name, cls in ACTIONS.items() if cls.in_bulk]


def comment_moderate(
    *,
    comment_id: int,
    actor: User,
    action: str,
    reason: str = "",
    channel: str = "",
    if_task_open: int | None = None,
) -> Comment:
    """Take moderator action ``action`` on a comment (the service behind the API, the console,
    the admin and the held-comment email's links). ``channel`` is recorded in the audit entry
    (empty: the console, the API, the admin); ``if_task_open``: take it only while that review
    task of the comment is open, else ``AlreadyDecided`` (a decision link is good once)."""
    cls = ACTIONS.get(action)
    if cls is None:
        raise InvalidInput("Unknown action.", fields={"action": [f"Must be one of {sorted(ACTIONS)}."]})
    comment = Comment.objects.select_related("subject__site").filter(pk=comment_id).first()
    if comment is None:
        raise NotFound("Unknown comment.")
    return cls(comment=comment, actor=actor, reason=reason, channel=channel, if_task_open=if_task_open).execute()


def top_comments_feature(*, hours: int = 24) -> int:
    """Feature the "god comments" (神评论) of active subjects. The rule: in each subject with a
    comment in the last ``hours``, the ``MODERATION_FEATURE_PER_SUBJECT`` most-liked published
    comments with at least ``MODERATION_FEATURE_MIN_LIKES`` likes, except any a moderator
    unfeatured (their decision stands). Returns how many were featured."""
    since = id_floor_at(timezone.now() - timedelta(hours=hours))
    subjects = Comment.objects.filter(id__gte=since).values_list("subject_id", flat=True).distinct()
    overruled = AuditEntry.objects.filter(action="unfeature", actor__isnull=False).values("comment_id")
    featured = 0
    for subject_id in subjects.iterator():
        top = list(
            Comment.objects.filter(
                subject_id=subject_id, status=Status.PUBLISHED, like_count__gte=settings.MODERATION_FEATURE_MIN_LIKES
            )
            .exclude(id__in=overruled)
            .select_related("subject__site")
            .order_by("-like_count", "id")[: settings.MODERATION_FEATURE_PER_SUBJECT]
        )
        for comment in top:
            if not comment.featured:
                Feature(comment=comment, actor=None, reason="top comment").execute()
                featured += 1
    return featured
