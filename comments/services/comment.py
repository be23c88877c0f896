"""The writes of one comment: posting, a reply, status and flags, deletion, edits."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .. import hooks
from ..exceptions import InvalidInput, NotFound, PermissionDenied
from ..ids import new_id
from ..models import (
    GONE_STATUSES,
    Comment,
    CommentContent,
    Status,
    Subject,
    User,
    Visibility,
    is_counted,
)
from ..queries import (
    Viewer,
    can_see,
    check_acts_on_site,
    is_site_moderator,
    viewer_for,
)
from ..rendering import render_markdown
from .content import check_body, check_subject_open, initial_status, resolve_mentions
from .locks import comment_lock, lock_comment, pages_change
from .storage import NewComment, apply_count_delta, comment_place, comments_store

# --- comments ------------------------------------------------------------------------------


def comment_create(
    *,
    subject: Subject,
    author: User,
    body: object,
    reply_to_id: int | None = None,
    visibility: str = Visibility.PUBLIC,
    author_ip: str | None = None,
    user_agent: str = "",
    created_at: datetime | None = None,
    viewer: Viewer | None = None,
) -> Comment:
    """Post a comment: validate, check, render, then floor + insert + counters in one
    transaction (``comments_store``: one statement on PostgreSQL). Raises a ``CommentsError``
    subclass for anything the caller must refuse. ``viewer`` is the author's role on the site
    when the caller already loaded it. The comment comes back with its subject and its content
    row attached. No ``post_save`` signal is sent: the core's hook is ``comment_posted``."""
    body = check_body(body)
    if visibility not in Visibility.values:
        raise InvalidInput("Unknown visibility.", fields={"visibility": [f"Must be one of {Visibility.values}."]})
    site = subject.site
    check_acts_on_site(user=author, site=site)
    if viewer is None:
        viewer = viewer_for(user=author, site=site)
    check_subject_open(subject_state=subject.state, site_id=site.pk, user=author, is_moderator=viewer.is_moderator)
    parent = None
    if reply_to_id is not None:
        parent = Comment.objects.select_related("author").filter(pk=reply_to_id, subject_id=subject.id).first()
        if parent is None and not Comment.objects.filter(pk=reply_to_id).exists():
            raise NotFound("The comment replied to does not exist.")
        if parent is None:
            raise InvalidInput(
                "reply_to_id belongs to another subject.",
                fields={"reply_to_id": ["The comment replied to is in another subject."]},
            )
        if parent.status in GONE_STATUSES or not can_see(viewer=viewer, comment=parent):
            raise NotFound("The comment replied to does not exist.")

    check = hooks.ContentCheck(site=site, subject=subject, author=author, body=body, is_moderator=viewer.is_moderator)
    decision = hooks.run_content_checks(
        check, hooks.ContentDecision(status=initial_status(site, author, viewer.is_moderator), body=body)
    )
    html = render_markdown(decision.body)
    mentions = resolve_mentions(decision.body, subject.id)
    comment_id = new_id()
    now = created_at or timezone.now()

    comment = Comment(
        id=comment_id,
        subject_id=subject.id,
        author=author,
        reply_to=parent,
        floor=0,
        status=decision.status,
        visibility=visibility,
        created_at=now,
    )
    comment_place(comment, parent)
    content = CommentContent(
        comment=comment,
        subject_id=subject.id,
        body=decision.body,
        html=html,
        mentions=mentions,
        author_ip=author_ip,
        user_agent=(user_agent or "")[:512],
    )
    counted = is_counted(decision.status, visibility)
    comments_store([NewComment(comment, content, counted)], closed_ok=viewer.is_moderator)
    # Outside a caller's transaction the comment is committed by now and this runs at once.
    transaction.on_commit(
        lambda: hooks.send_together(
            hooks.comment_posted,
            sender=Comment,
            comment_id=comment.id,
            subject_id=subject.id,
            status=comment.status,
            visibility=comment.visibility,
            reasons=decision.reasons,
        )
    )
    comment.subject = subject
    return comment


def comment_set_status(*, comment_id: int, to_status: str, actor: User | None = None) -> tuple[Comment, str]:
    """The one status transition of the product: moves a comment to ``to_status`` and keeps
    every counter right. Returns ``(comment, from_status)``; a no-op when already there.

    Runs in its own transaction, or joins the caller's (moderation writes its audit entry in
    the same one)."""
    if to_status not in Status.values:
        raise InvalidInput(f"Unknown status {to_status!r}.")
    with transaction.atomic():
        comment = lock_comment(comment_id)
        subject_id = comment.subject_id
        from_status = comment.status
        if from_status == to_status:
            return comment, from_status
        was = is_counted(from_status, comment.visibility)
        now = is_counted(to_status, comment.visibility)
        updates: dict[str, object] = {"status": to_status}
        if to_status != Status.PUBLISHED:
            # Flags belong to published comments only.
            updates.update(pinned=False, featured=False)
        Comment.objects.filter(pk=comment_id, subject_id=subject_id).update(**updates)
        for name, value in updates.items():
            setattr(comment, name, value)
        if was != now:
            apply_count_delta(comment, +1 if now else -1)
        pages_change(subject_id)
        transaction.on_commit(
            lambda: hooks.send_together(
                hooks.comment_status_changed,
                sender=Comment,
                comment_id=comment_id,
                subject_id=subject_id,
                from_status=from_status,
                to_status=to_status,
                visibility=comment.visibility,
                actor_id=getattr(actor, "pk", None),
            )
        )
    return comment, from_status


def comment_set_flags(
    *, comment_id: int, pinned: bool | None = None, featured: bool | None = None
) -> tuple[Comment, dict]:
    """Pin or feature a published comment (or take the flag off); returns ``(comment, the
    flags as they were)``. Only top-level comments are pinned, at most
    ``COMMENTS_PINNED_LIMIT`` per subject: list 1 shows that many pinned comments first.

    Runs in its own transaction, or joins the caller's."""
    with transaction.atomic():
        comment = lock_comment(comment_id)
        subject_id = comment.subject_id
        before = {"pinned": comment.pinned, "featured": comment.featured}
        changes = {}
        if pinned is not None and pinned != comment.pinned:
            changes["pinned"] = pinned
        if featured is not None and featured != comment.featured:
            changes["featured"] = featured
        if any(changes.values()) and comment.status != Status.PUBLISHED:
            raise InvalidInput("Only published comments can be pinned or featured.")
        if changes.get("pinned"):
            if comment.depth != 0:
                raise InvalidInput("Only top-level comments can be pinned.")
            pinned_now = Comment.objects.filter(subject_id=subject_id, depth=0, pinned=True).count()
            if pinned_now >= settings.COMMENTS_PINNED_LIMIT:
                raise InvalidInput(f"This discussion already has {pinned_now} pinned comments; unpin one first.")
        if changes:
            Comment.objects.filter(pk=comment_id, subject_id=subject_id).update(**changes)
            for name, value in changes.items():
                setattr(comment, name, value)
            pages_change(subject_id)
    return comment, before


def comment_soft_delete(*, comment: Comment, actor: User) -> Comment:
    """Delete as the author or a site moderator: the row stays (a placeholder while it has
    visible replies) and counters drop."""
    check_acts_on_site(user=actor, site=comment.subject.site_id)
    is_mod = is_site_moderator(user=actor, site=comment.subject.site)
    if comment.author_id != actor.pk and not is_mod:
        raise PermissionDenied("Only the author or a moderator may delete this comment.")
    if (
        actor.is_guest
        and not is_mod
        and timezone.now() - comment.created_at > timedelta(seconds=settings.COMMENTS_EDIT_WINDOW)
    ):
        # A guest has no account to come back to: their hold on a comment ends with the edit window.
        raise PermissionDenied("A guest may delete their comment only within the edit window.")
    with transaction.atomic():
        current = lock_comment(comment.id)
        if current.status in GONE_STATUSES:  # as it is now: a moderator may have rejected it meanwhile
            return current
        updated, _ = comment_set_status(comment_id=comment.id, to_status=Status.DELETED, actor=actor)
    return updated


def comment_edit(*, comment: Comment, editor: User, body: object) -> Comment:
    """The author edits within ``COMMENTS_EDIT_WINDOW`` seconds; the text is checked again and
    may be sent back to review.

    The text is checked and rendered before the comment is locked (those take a while); what
    the edit requires of the comment and its subject (still open) is checked on the rows as
    read, to refuse early, and again on the rows as they are under the lock, which is what
    changes. If a moderator changed the comment's status meanwhile, their decision stands (the
    second check looks at the new text again)."""
    check_acts_on_site(user=editor, site=comment.subject.site_id)
    check_editable(comment, editor)
    body = check_body(body)
    subject = comment.subject
    site = subject.site
    viewer = viewer_for(user=editor, site=site)
    check_subject_open(subject_state=subject.state, site_id=site.pk, user=editor, is_moderator=viewer.is_moderator)
    check = hooks.ContentCheck(
        site=site, subject=subject, author=editor, body=body, is_moderator=viewer.is_moderator, comment=comment
    )
    decision = hooks.run_content_checks(check, hooks.ContentDecision(status=comment.status, body=body))
    html = render_markdown(decision.body)
    mentions = resolve_mentions(decision.body, comment.subject_id)
    now = timezone.now()
    with transaction.atomic():
        current = comment_lock(comment.id)
        subject = current.subject  # as it is now
        check_editable(current, editor)
        check_subject_open(subject_state=subject.state, site_id=site.pk, user=editor, is_moderator=viewer.is_moderator)
        to_status = decision.status if current.status == comment.status else current.status
        CommentContent.objects.filter(pk=comment.id, subject_id=comment.subject_id).update(
            body=decision.body, html=html, mentions=mentions
        )
        Comment.objects.filter(pk=comment.id, subject_id=comment.subject_id).update(edited_at=now)
        pages_change(comment.subject_id)
        if to_status != current.status:
            current, _ = comment_set_status(comment_id=comment.id, to_status=to_status, actor=editor)
        current.edited_at = now
        transaction.on_commit(
            lambda: hooks.send_together(
                hooks.comment_edited,
                sender=Comment,
                comment_id=current.id,
                subject_id=current.subject_id,
                status=current.status,
                reasons=decision.reasons,
            )
        )
    current.subject = subject
    return current


def check_editable(comment: Comment, editor: User) -> None:
    if comment.author_id != editor.pk:
        raise PermissionDenied("Only the author may edit this comment.")
    if comment.status in GONE_STATUSES:
        raise PermissionDenied("A deleted comment cannot be edited.")
    if timezone.now() - comment.created_at > timedelta(seconds=settings.COMMENTS_EDIT_WINDOW):
        raise PermissionDenied("The edit window for this comment has passed.")
