"""Every write of the comment core. Views, API views, tasks and the other apps call these.

Lock order, kept by every transaction that changes comment counters: the subject row first,
then comment rows. Two writers of one subject therefore queue on the subject row instead of
deadlocking on each other's comment rows.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from . import hooks, pagecache, paths
from .exceptions import InvalidInput, NotFound, PermissionDenied, SubjectClosed
from .ids import new_id
from .models import (
    GONE_STATUSES,
    ApiToken,
    Comment,
    CommentContent,
    ExternalIdentity,
    Follow,
    Mode,
    ModerationPolicy,
    Site,
    Status,
    Subject,
    SubjectKey,
    SubjectState,
    User,
    Visibility,
    is_counted,
)
from .names import clean_display_name
from .queries import (
    Viewer,
    can_see,
    check_acts_on_site,
    is_site_moderator,
    subject_id_by_key,
    subject_ids_by_key,
    viewer_for,
)
from .rendering import parse_mentions, render_markdown

# --- content -------------------------------------------------------------------------------


# Characters that show nothing besides whitespace, controls (Cc) and format characters (Cf: the
# zero-width space, non-joiner and joiner, the word joiner, the byte order mark, bidi marks, the
# soft hyphen, tags...): the letters and marks fonts draw as blanks (the combining grapheme
# joiner, the Hangul fillers, the Braille blank) and the variation selectors.
_BLANK_LOOKING = frozenset("\u034f\u115f\u1160\u2800\u3164\uffa0")
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))


def _shows_nothing(char: str) -> bool:
    if char.isspace() or char in _BLANK_LOOKING or unicodedata.category(char) in ("Cc", "Cf"):
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _VARIATION_SELECTORS)


def has_visible_text(text: str) -> bool:
    """Whether ``text`` shows anything at all: not only whitespace and invisible characters
    (a body of zero-width spaces and joiners is an empty comment that looks posted)."""
    return not all(_shows_nothing(char) for char in text)


def check_body(body: object) -> str:
    """The body as stored: a string of 1..COMMENTS_MAX_BODY characters with something visible
    in it (not only whitespace, nor only zero-width and other invisible characters)."""
    if not isinstance(body, str):
        raise InvalidInput("body must be a string.", fields={"body": ["Must be a string."]})
    if "\x00" in body:
        raise InvalidInput("body contains a NUL character.", fields={"body": ["NUL characters are not allowed."]})
    body = body.strip()
    if not body:
        raise InvalidInput("body is empty.", fields={"body": ["This field may not be blank."]})
    if not has_visible_text(body):
        raise InvalidInput(
            "body has no visible characters.", fields={"body": ["The comment has no visible characters."]}
        )
    limit = settings.COMMENTS_MAX_BODY
    if len(body) > limit:
        raise InvalidInput(
            f"body is longer than {limit} characters.",
            fields={"body": [f"Ensure this field has no more than {limit} characters."]},
        )
    return body


def check_subject_open(*, subject_state: str, site_id: int, user, is_moderator: bool | None = None) -> None:
    """Refuse ``user``'s write in a closed subject (``SubjectClosed``) unless they moderate its
    site: a closed discussion is read-only for everyone else. Every write a reader makes in a
    subject asks this (a comment or reply, a like or unlike, an edit, a report); an author may
    still delete their own comment, which takes words back rather than adding to the
    discussion. ``is_moderator``: the user's role when the caller knows it; else it is read,
    and only for a closed subject."""
    if subject_state != SubjectState.CLOSED:
        return
    if is_moderator is None:
        is_moderator = is_site_moderator(user, site_id)
    if not is_moderator:
        raise SubjectClosed()


def _resolve_mentions(body: str, subject_id: int) -> list[dict]:
    """The users a body mentions, in one query: ``@name`` is a username (any case), or else the
    display name (any case) of exactly one user who has commented in the subject, since that is
    the name the widget shows (single sign-on usernames are opaque). A name matching several
    participants' display names mentions nobody. Guests are never mentioned: they have no
    address anyone verified to be told at, and a guest who takes a member's name must not take
    the member's mentions (or make them ambiguous)."""
    names = parse_mentions(body, settings.COMMENTS_MAX_MENTIONS)
    if not names:
        return []
    from django.db.models import Exists, OuterRef, Q
    from django.db.models.functions import Lower

    lowered = [n.lower() for n in names]
    participant = Exists(Comment.objects.filter(author_id=OuterRef("pk"), subject_id=subject_id))
    users = (
        User.objects.annotate(lname=Lower("username"), ldisplay=Lower("display_name"), participant=participant)
        .filter(Q(lname__in=lowered) | (Q(ldisplay__in=lowered) & Q(participant=True)), is_active=True, is_guest=False)
        .values_list("id", "lname", "ldisplay", "participant")
    )
    by_username: dict[str, int] = {}
    by_display_name: dict[str, set[int]] = {}
    for account_id, username, display_name, is_participant in users:
        by_username[username] = account_id
        if is_participant:
            by_display_name.setdefault(display_name, set()).add(account_id)
    found: list[dict] = []
    for name in names:
        user_id = by_username.get(name.lower())
        if user_id is None and len(by_display_name.get(name.lower(), ())) == 1:
            (user_id,) = by_display_name[name.lower()]
        if user_id is not None and all(m["id"] != user_id for m in found):
            found.append({"id": user_id, "name": name})
    return found


def _initial_status(site: Site, author: User, is_moderator: bool) -> str:
    if site.moderation == ModerationPolicy.PRE and not is_moderator:
        return Status.PENDING
    return Status.PUBLISHED


# --- counters ------------------------------------------------------------------------------


def _apply_count_delta(comment: Comment, delta: int, *, subject_counted: bool = False) -> None:
    """Add ``delta`` (+1/-1) to every counter ``comment`` takes part in; the subject's are
    left alone when ``subject_counted`` (the caller did them).

    Call inside the transaction that changes the comment, after locking its subject row.
    """
    top_level = comment.depth == 0
    if not subject_counted:
        Subject.objects.filter(pk=comment.subject_id).update(
            comment_count=F("comment_count") + delta,
            root_count=F("root_count") + (delta if top_level else 0),
        )
    if top_level:
        return
    ancestors, direct_parents = _counted_ancestors(comment)
    Comment.objects.filter(subject_id=comment.subject_id, pk__in={*ancestors, *direct_parents}).update(
        descendant_count=F("descendant_count") + Case(When(pk__in=ancestors, then=Value(delta)), default=Value(0)),
        reply_count=F("reply_count") + Case(When(pk__in=direct_parents, then=Value(delta)), default=Value(0)),
    )


def _store_new_comment(comment: Comment, content: CommentContent, *, counted: bool, moderator: bool) -> int:
    """Store a new comment and its content, take its floor and count it (when ``counted``) in
    its subject and, for a reply, in its ancestors; returns the floor. A top-level comment's
    floor comes from the subject's sequence, a reply's from its thread's (the top-level
    comment's ``reply_floor_seq``); both are taken under the row's lock in the transaction that
    inserts, so floors stay unique and gap-free.

    The subject must still be open, unless the author moderates its site (``moderator``): the
    check the caller made on the subject as it read it is made again on the row this updates,
    under its lock, since a moderator may have closed the discussion in between. A closed one
    stores nothing and raises ``SubjectClosed``.

    On PostgreSQL all of it is one statement, run in autocommit unless the caller holds a
    transaction, so the subject row is locked only while the server runs it and commits: no
    round trip to this process (which may be waiting for the GIL behind other threads) happens
    while every other writer of the subject waits. Run in autocommit, its commit is asynchronous
    when ``COMMENTS_ASYNC_POST_COMMIT`` says so (``_commits_asynchronously``).

    The subject's cached pages are dropped once the comment is committed, and only then: a
    reader reads the subject's version before the rows, so a page rebuilt from the rows as
    they were carries a version the deletion made old."""
    if connection.vendor == "postgresql":
        floor = _store_new_comment_in_one_statement(comment, content, counted=counted, moderator=moderator)
    else:
        floor = _store_new_comment_step_by_step(comment, content, counted=counted, moderator=moderator)
    transaction.on_commit(lambda: pagecache.subject_changed(comment.subject_id))
    comment._state.adding = content._state.adding = False
    comment._state.db = content._state.db = connection.alias
    return floor


def _counted_ancestors(comment: Comment) -> tuple[list[int], list[int]]:
    """Of a reply: the comments whose ``descendant_count`` counts it (every ancestor in the
    tree) and those whose ``reply_count`` does (its top-level comment and the one it answers)."""
    assert comment.root_id is not None and comment.reply_to_id is not None  # a reply
    return comment.ancestor_ids(), sorted({comment.root_id, comment.reply_to_id})


_COMMENT_COLUMNS = (
    "id, subject_id, author_id, reply_to_id, root_id, path, depth, floor, status, visibility, pinned, featured, "
    "like_count, reply_count, descendant_count, reply_floor_seq, created_at, edited_at"
)
_CONTENT_COLUMNS = "comment_id, subject_id, body, html, mentions, author_ip, user_agent"


# Makes the transaction of the statement that runs it commit without waiting for the WAL flush.
_ASYNC_COMMIT = ", set_config('synchronous_commit', 'off', true)"


def _commits_asynchronously() -> bool:
    """Whether a post's statement may commit asynchronously: when the settings allow it and
    the statement is its own transaction (a flush costs a post more than the rest of its
    statement). The floor and the counters commit with the comment, so a crash of the server
    loses a post whole or not at all. A caller's transaction keeps its own durability."""
    return settings.COMMENTS_ASYNC_POST_COMMIT and not connection.in_atomic_block


def _not_stored(subject_id: int, what: str) -> Exception:
    """Why a new comment's statement stored nothing: its subject was closed since the caller
    read it, or else what ``what`` names was deleted."""
    state = Subject.objects.filter(pk=subject_id).values_list("state", flat=True).first()
    if state == SubjectState.CLOSED:
        return SubjectClosed()
    return NotFound(f"{what} no longer exists.")


# Of the subject row a new comment's statement updates: still open, or the author may write in
# a closed one (a moderator of its site).
_STILL_OPEN = "(state <> %s OR %s)"


def _store_new_comment_in_one_statement(
    comment: Comment, content: CommentContent, *, counted: bool, moderator: bool
) -> int:
    subject_table, comment_table, content_table = (
        connection.ops.quote_name(model._meta.db_table) for model in (Subject, Comment, CommentContent)
    )
    delta = int(counted)
    top_level = comment.depth == 0
    if top_level:
        # The subject row: the floor and the counters.
        steps = (
            f"taken AS (UPDATE {subject_table} SET floor_seq = floor_seq + 1, comment_count = comment_count + %s, "
            f"root_count = root_count + %s WHERE id = %s AND {_STILL_OPEN} RETURNING floor_seq AS floor)"
        )
        step_params: list[Any] = [delta, delta, comment.subject_id, SubjectState.CLOSED.value, moderator]
        floor_from = "taken"
    else:
        # The subject row's counter first (the lock order: the one-time filter below runs this
        # before any comment row is touched), then the thread's rows: the top-level comment's
        # floor sequence and every counter the reply takes part in, in one UPDATE (a statement
        # may change a row only once).
        ancestors, direct = _counted_ancestors(comment)
        steps = (
            f"subject AS (UPDATE {subject_table} SET comment_count = comment_count + %s "
            f"WHERE id = %s AND {_STILL_OPEN} RETURNING id), "
            f"taken AS (UPDATE {comment_table} SET "
            "reply_floor_seq = reply_floor_seq + CASE WHEN id = %s THEN 1 ELSE 0 END, "
            "descendant_count = descendant_count + CASE WHEN id = ANY(%s::bigint[]) THEN %s ELSE 0 END, "
            "reply_count = reply_count + CASE WHEN id = ANY(%s::bigint[]) THEN %s ELSE 0 END "
            "WHERE id = ANY(%s::bigint[]) AND subject_id = %s AND (SELECT count(*) FROM subject) = 1 "
            "RETURNING id, reply_floor_seq AS floor)"
        )
        step_params = [
            delta,
            comment.subject_id,
            SubjectState.CLOSED.value,
            moderator,
            comment.root_id,
            ancestors,
            delta,
            direct,
            delta,
            sorted({*ancestors, *direct}),
            comment.subject_id,
        ]
        floor_from = f"taken WHERE taken.id = {int(comment.root_id)}"  # type: ignore[arg-type]  # a reply's
    sql = (
        f"WITH {steps}, "
        f"stored AS (INSERT INTO {comment_table} ({_COMMENT_COLUMNS}) "
        # Cast: in a SELECT list, unlike VALUES, parameters get no type from the target column.
        "SELECT %s::bigint, %s::bigint, %s::bigint, %s::bigint, %s::bigint, %s::text, %s::smallint, taken.floor, "
        f"%s::text, %s::text, false, false, 0, 0, 0, 0, %s::timestamptz, NULL FROM {floor_from} "
        "RETURNING id, floor), "
        f"stored_content AS (INSERT INTO {content_table} ({_CONTENT_COLUMNS}) "
        "SELECT stored.id, %s::bigint, %s::text, %s::text, %s::jsonb, %s::inet, %s::text FROM stored) "
        f"SELECT floor{_ASYNC_COMMIT if _commits_asynchronously() else ''} FROM stored"
    )
    params = [
        *step_params,
        comment.id,
        comment.subject_id,
        comment.author_id,
        comment.reply_to_id,
        comment.root_id,
        comment.path,
        comment.depth,
        comment.status,
        comment.visibility,
        comment.created_at,
        content.subject_id,
        content.body,
        content.html,
        json.dumps(content.mentions),
        content.author_ip,
        content.user_agent,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        # The subject was closed, or it or the thread deleted, since they were read: nothing
        # was stored.
        raise _not_stored(comment.subject_id, "The discussion or the comment replied to")
    return row[0]


def _store_new_comment_step_by_step(
    comment: Comment, content: CommentContent, *, counted: bool, moderator: bool
) -> int:
    """The same as one statement, for databases without data-modifying CTEs (SQLite, which
    runs one writer at a time anyway)."""
    top_level = comment.depth == 0
    delta = int(counted)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {connection.ops.quote_name(Subject._meta.db_table)} SET floor_seq = floor_seq + %s, "
            f"comment_count = comment_count + %s, root_count = root_count + %s WHERE id = %s AND {_STILL_OPEN} "
            "RETURNING floor_seq",
            [int(top_level), delta, delta * int(top_level), comment.subject_id, SubjectState.CLOSED.value, moderator],
        )
        row = cursor.fetchone()
        if row is None:
            raise _not_stored(comment.subject_id, "The discussion")
        comment.floor = row[0]
        if not top_level:
            cursor.execute(
                f"UPDATE {connection.ops.quote_name(Comment._meta.db_table)} SET reply_floor_seq = reply_floor_seq + 1 "
                "WHERE id = %s RETURNING reply_floor_seq",
                [comment.root_id],
            )
            row = cursor.fetchone()
            if row is None:
                raise NotFound("The comment replied to no longer exists.")
            comment.floor = row[0]
        comment.save(force_insert=True)
        content.save(force_insert=True)
        if counted and not top_level:
            _apply_count_delta(comment, +1, subject_counted=True)
    return comment.floor


def _lock_subject(subject_id: int) -> None:
    list(Subject.objects.select_for_update().filter(pk=subject_id).values_list("pk", flat=True))


def _lock_comment(comment_id: int) -> Comment:
    """The comment, locked after its subject (the lock order); call inside a transaction."""
    subject_id = Comment.objects.filter(pk=comment_id).values_list("subject_id", flat=True).first()
    if subject_id is None:
        raise NotFound()
    _lock_subject(subject_id)
    return Comment.objects.select_for_update().get(pk=comment_id, subject_id=subject_id)


def comment_lock(comment_id: int) -> Comment:
    """The comment as it is now, locked for a change made in the caller's transaction (after
    its subject: the lock order), with its subject and site. Whatever a change requires of the
    comment is checked on this row, never on one read before the lock: another transaction
    may have changed it since (lock, then check, then change)."""
    comment = _lock_comment(comment_id)
    comment.subject = Subject.objects.select_related("site").get(pk=comment.subject_id)
    return comment


def pages_change(subject_id: int) -> None:
    """The subject's cached pages go out of date now and again when the current transaction
    commits: a reader who rebuilds a page in between reads the rows as they were, and the
    second deletion drops what it built. (Only the first one happens in a transaction that is
    rolled back, which costs a rebuild and nothing else.)"""
    pages_change_many([subject_id])


def pages_change_many(subject_ids) -> None:
    """``pages_change`` for many subjects, in one round trip to the cache each time."""
    subject_ids = sorted(set(subject_ids))
    pagecache.subjects_changed(subject_ids)
    transaction.on_commit(lambda: pagecache.subjects_changed(subject_ids))


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
    transaction (one statement on PostgreSQL). Raises a ``CommentsError`` subclass for
    anything the caller must refuse. ``viewer`` is the author's role on the site when the
    caller already loaded it. The comment comes back with its subject and its content row
    attached. No ``post_save`` signal is sent: the core's hook is ``comment_posted``."""
    body = check_body(body)
    if visibility not in Visibility.values:
        raise InvalidInput("Unknown visibility.", fields={"visibility": [f"Must be one of {Visibility.values}."]})
    site = subject.site
    check_acts_on_site(author, site)
    if viewer is None:
        viewer = viewer_for(author, site)
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
        if parent.status in GONE_STATUSES or not can_see(viewer, parent):
            raise NotFound("The comment replied to does not exist.")

    check = hooks.ContentCheck(site=site, subject=subject, author=author, body=body, is_moderator=viewer.is_moderator)
    decision = hooks.run_content_checks(
        check, hooks.ContentDecision(status=_initial_status(site, author, viewer.is_moderator), body=body)
    )
    html = render_markdown(decision.body)
    mentions = _resolve_mentions(decision.body, subject.id)
    comment_id = new_id()
    now = created_at or timezone.now()

    if parent is None:
        path, depth, root_id = paths.encode_step(comment_id), 0, None
    else:
        root_id = parent.root_id or parent.id
        if parent.depth >= settings.COMMENTS_MAX_DEPTH:
            # At the depth cap a reply is stored as its target's sibling; reply_to still names
            # the target, so "reply to @name" stays right.
            path, depth = paths.child_path(paths.parent_path(parent.path), comment_id), parent.depth
        else:
            path, depth = paths.child_path(parent.path, comment_id), parent.depth + 1
    comment = Comment(
        id=comment_id,
        subject_id=subject.id,
        author=author,
        reply_to=parent,
        root_id=root_id,
        path=path,
        depth=depth,
        floor=0,
        status=decision.status,
        visibility=visibility,
        created_at=now,
    )
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
    comment.floor = _store_new_comment(comment, content, counted=counted, moderator=viewer.is_moderator)
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
        comment = _lock_comment(comment_id)
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
            _apply_count_delta(comment, +1 if now else -1)
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
        comment = _lock_comment(comment_id)
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
    check_acts_on_site(actor, comment.subject.site_id)
    is_mod = is_site_moderator(actor, comment.subject.site)
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
        current = _lock_comment(comment.id)
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
    check_acts_on_site(editor, comment.subject.site_id)
    _check_editable(comment, editor)
    body = check_body(body)
    subject = comment.subject
    site = subject.site
    viewer = viewer_for(editor, site)
    check_subject_open(subject_state=subject.state, site_id=site.pk, user=editor, is_moderator=viewer.is_moderator)
    check = hooks.ContentCheck(
        site=site, subject=subject, author=editor, body=body, is_moderator=viewer.is_moderator, comment=comment
    )
    decision = hooks.run_content_checks(check, hooks.ContentDecision(status=comment.status, body=body))
    html = render_markdown(decision.body)
    mentions = _resolve_mentions(decision.body, comment.subject_id)
    now = timezone.now()
    with transaction.atomic():
        current = comment_lock(comment.id)
        subject = current.subject  # as it is now
        _check_editable(current, editor)
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


def _check_editable(comment: Comment, editor: User) -> None:
    if comment.author_id != editor.pk:
        raise PermissionDenied("Only the author may edit this comment.")
    if comment.status in GONE_STATUSES:
        raise PermissionDenied("A deleted comment cannot be edited.")
    if timezone.now() - comment.created_at > timedelta(seconds=settings.COMMENTS_EDIT_WINDOW):
        raise PermissionDenied("The edit window for this comment has passed.")


# --- counters repair -----------------------------------------------------------------------


@dataclass
class ReconcileReport:
    subject_id: int
    fixed_subject: bool
    fixed_comments: int


def subject_reconcile_counters(*, subject_id: int) -> ReconcileReport:
    """Recompute every denormalized counter of one subject from the rows, set-based, and
    report what had drifted."""
    from django.db.models import Count, OuterRef, Q, Subquery
    from django.db.models.functions import Coalesce, Concat

    counted = Q(status=Status.PUBLISHED, visibility=Visibility.PUBLIC)

    def count_of(qs):
        return Coalesce(
            Subquery(qs.order_by().values("subject_id").annotate(n=Count("pk")).values("n")[:1]),
            Value(0),
        )

    same_subject = Comment.objects.filter(counted, subject_id=OuterRef("subject_id"))
    descendants = count_of(
        same_subject.filter(path__gt=OuterRef("path"), path__lt=Concat(OuterRef("path"), Value(paths.SUBTREE_END)))
    )
    # root_id / reply_to_id already imply the subject; repeating subject_id here made the
    # planner scan the whole subject per row (minutes instead of a second on 100k comments).
    counted_rows = Comment.objects.filter(counted)
    thread = count_of(counted_rows.filter(root_id=OuterRef("pk")))
    direct = count_of(counted_rows.filter(reply_to_id=OuterRef("pk")))
    with transaction.atomic():
        _lock_subject(subject_id)
        rows = Comment.objects.filter(subject_id=subject_id)
        expected = rows.annotate(
            want_desc=descendants,
            want_replies=Case(When(depth=0, then=thread), default=direct),
        )
        drifted = [
            (c.pk, c.want_desc, c.want_replies)
            for c in expected.filter(~Q(descendant_count=F("want_desc")) | ~Q(reply_count=F("want_replies"))).only("pk")
        ]
        for pk, want_desc, want_replies in drifted:
            Comment.objects.filter(pk=pk).update(descendant_count=want_desc, reply_count=want_replies)
        totals = rows.aggregate(comments=Count("pk", filter=counted), roots=Count("pk", filter=counted & Q(depth=0)))
        fixed_subject = bool(
            Subject.objects.filter(pk=subject_id)
            .exclude(comment_count=totals["comments"], root_count=totals["roots"])
            .update(comment_count=totals["comments"], root_count=totals["roots"])
        )
        if drifted or fixed_subject:
            pages_change(subject_id)
    return ReconcileReport(subject_id=subject_id, fixed_subject=fixed_subject, fixed_comments=len(drifted))


# --- sites ---------------------------------------------------------------------------------


def site_set_allowed_origins(*, site: Site, origins: list[str]) -> Site:
    """The origins that may frame the site's widget and read its counts. Saved as a model
    save, so every process's cached copy of the site goes (``pagecache.site_changed``)."""
    site.allowed_origins = [origin.rstrip("/") for origin in origins]
    site.save(update_fields=["allowed_origins"])
    return site


def site_signin_update(
    *,
    site: Site,
    actor: User,
    sso: bool | None = None,
    email: bool | None = None,
    guests: bool | None = None,
    oidc: list[str] | None = None,
    link_email: bool | None = None,
    guest_moderation: str | None = None,
) -> Site:
    """Change how readers may sign in to the site (API.md, "Sign-in methods"); its moderators
    only. ``oidc`` names providers the service is configured with (ACCOUNTS_OIDC_PROVIDERS);
    ``guest_moderation`` (``pre`` or ``post``) is how guests' comments are moderated.
    Saved as a model save, so cached copies of the site (and its embed pages) go."""
    if not is_site_moderator(actor, site):
        raise PermissionDenied("Only moderators of this site may change how readers sign in.")
    changes: dict[str, object] = {
        "signin_sso": sso,
        "signin_email": email,
        "signin_guests": guests,
        "signin_link_email": link_email,
        "guest_moderation": guest_moderation,
    }
    if oidc is not None:
        unknown = sorted(set(oidc) - set(settings.ACCOUNTS_OIDC_PROVIDERS))
        if unknown:
            raise InvalidInput(fields={"oidc": [f"Not a provider of this service: {', '.join(unknown)}."]})
        changes["signin_oidc"] = list(dict.fromkeys(oidc))
    changed = [name for name, value in changes.items() if value is not None and getattr(site, name) != value]
    for name in changed:
        setattr(site, name, changes[name])
    if changed:
        site.save(update_fields=changed)
    return site


# --- subjects ------------------------------------------------------------------------------


def subject_get_or_create(
    *, site: Site, key: str, title: str = "", url: str = "", creator: User | None = None
) -> tuple[Subject, bool]:
    """The subject ``site`` calls ``key``, made when it has none (``True``: made now). Found by
    its key's row, then by id: two probes that Citus routes to one shard each. ``creator``: the
    signed-in user who asks, whose sign-in must be good on the site."""
    if creator is not None:
        check_acts_on_site(creator, site)
    subject_id = subject_id_by_key(site, key)
    if subject_id is None:
        subject = Subject(site=site, key=key, title=title, url=url, mode=site.default_mode)
        subject_id = subjects_create(site, [subject])[key]
        if subject_id == subject.pk:
            return subject, True
    subject = Subject.objects.get(pk=subject_id)
    subject.site = site
    return subject, False


def subjects_create(site: Site, subjects: list[Subject]) -> dict[str, int]:
    """Make ``site``'s new ``subjects`` (unsaved) with their keys' rows, in one transaction,
    and return the id of the subject of each of their keys: the new subject's, or that of the
    subject made for the key first (by another request meanwhile, or earlier in the list),
    whose key's row wins; a new subject that lost is removed. The only way subjects are made:
    a subject always has its key's row.

    The rows' unique key decides between two first readers of a new page at once: the second
    insert of the key waits for the first transaction and then skips the row (``ON CONFLICT
    DO NOTHING``), and the key's row read after it is the winner's."""
    if not subjects:
        return {}
    with transaction.atomic():
        Subject.objects.bulk_create(subjects, batch_size=_SUBJECTS_BATCH)
        SubjectKey.objects.bulk_create(
            [SubjectKey(site=site, key=s.key, subject_id=s.pk) for s in subjects],
            ignore_conflicts=True,
            batch_size=_SUBJECTS_BATCH,
        )
        keys = list({s.key: None for s in subjects})
        winners: dict[str, int] = {}
        for start in range(0, len(keys), _SUBJECTS_BATCH):
            winners.update(subject_ids_by_key(site, keys[start : start + _SUBJECTS_BATCH]))
        losers = [s.pk for s in subjects if winners[s.key] != s.pk]
        if losers:
            Subject.objects.filter(pk__in=losers).delete()
    return winners


# Rows (and parameters of a lookup) per statement: below SQLite's limit on parameters.
_SUBJECTS_BATCH = 500


def subject_update(
    *, subject: Subject, actor: User, mode: str | None = None, state: str | None = None, title: str | None = None
) -> Subject:
    """Change a subject's display mode, state or title; site moderators only. A mode is a view
    over the same paths, so switching it moves no row."""
    if not is_site_moderator(actor, subject.site):
        raise PermissionDenied("Only moderators of this site may change the subject.")
    changes: dict[str, object] = {}
    if mode is not None:
        changes["mode"] = Mode(mode)
    if state is not None:
        changes["state"] = SubjectState(state)
    if title is not None:
        changes["title"] = title
    if changes:
        Subject.objects.filter(pk=subject.pk).update(**changes)
        for name, value in changes.items():
            setattr(subject, name, value)
        pages_change(subject.pk)
    if state is not None:
        transaction.on_commit(
            lambda: hooks.subject_state_changed.send(sender=Subject, subject_id=subject.pk, state=subject.state)
        )
    return subject


# --- identity ------------------------------------------------------------------------------


def _token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_issue(*, user: User, site: Site | None = None, expires_at: datetime | None = None) -> tuple[str, ApiToken]:
    """A new bearer token of ``user`` (raw, and its row): good ``COMMENTS_TOKEN_TTL`` seconds,
    or until ``expires_at`` (a guest's: the end of their comment's edit window)."""
    raw = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        key_hash=_token_hash(raw),
        user=user,
        site=site,
        expires_at=expires_at or timezone.now() + timedelta(seconds=settings.COMMENTS_TOKEN_TTL),
    )
    return raw, token


def token_revoke(*, token: ApiToken) -> None:
    """Withdraw a bearer token (a sign-out): it authenticates nothing from now on, in every
    process, since each request looks its token up on the primary."""
    ApiToken.objects.filter(pk=token.pk).delete()


def sso_user_upsert(*, site: Site, external_id: str, name: str, email: str = "", avatar: str = "") -> User:
    """The local user for ``(site, external_id)``, created on first sight; name and avatar
    follow the host site's latest payload. The name is kept as one line of visible text
    (``clean_display_name``); one with nothing visible is the id, as a blank one is."""
    name = clean_display_name(name) or clean_display_name(external_id)
    with transaction.atomic():
        identity = (
            ExternalIdentity.objects.select_for_update()
            .select_related("user")
            .filter(site=site, external_id=external_id)
            .first()
        )
        if identity is None:
            digest = hashlib.sha256(f"{site.pk}:{external_id}".encode()).hexdigest()[:20]
            user = User.objects.create(
                username=f"sso-{site.key[:40]}-{digest}", display_name=name, avatar_url=avatar[:1000]
            )
            user.set_unusable_password()
            user.save(update_fields=["password"])
            try:
                with transaction.atomic():
                    ExternalIdentity.objects.create(site=site, external_id=external_id, user=user, email=email)
            except IntegrityError:
                # A concurrent first sign-in won: use its user.
                user.delete()
                identity = ExternalIdentity.objects.select_related("user").get(site=site, external_id=external_id)
                return identity.user
            return user
        user = identity.user
        changed = []
        if user.display_name != name:
            user.display_name = name
            changed.append("display_name")
        if user.avatar_url != avatar[:1000]:
            user.avatar_url = avatar[:1000]
            changed.append("avatar_url")
        if changed:
            user.save(update_fields=changed)
        if email and identity.email != email:
            ExternalIdentity.objects.filter(pk=identity.pk).update(email=email)
        return user


# --- follows -------------------------------------------------------------------------------


def follow_set(*, follower: User, followee_id: int, following: bool) -> tuple[bool, bool]:
    """Follow or unfollow; idempotent. Returns ``(following, mutual)``."""
    if followee_id == follower.pk:
        raise InvalidInput("You cannot follow yourself.")
    if not User.objects.filter(pk=followee_id, is_active=True).exists():
        raise NotFound("Unknown user.")
    if following:
        Follow.objects.get_or_create(follower=follower, followee_id=followee_id)
    else:
        Follow.objects.filter(follower=follower, followee_id=followee_id).delete()
    mutual = following and Follow.objects.filter(follower_id=followee_id, followee=follower).exists()
    return following, mutual
