"""Erasure: a person's data erased on their request (or staff's), idempotent step by step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.hashers import make_password

from comments import hooks, paths
from comments.models import GONE_STATUSES, Comment, CommentContent, ExternalIdentity, Status, User
from comments.services import pages_change

from ..models import ErasureMode, SitePrivacy
from ..sql import fetch, table
from .audit import audit
from .exports import sites_of


@dataclass
class ErasureReport:
    user_id: int
    comments_kept_as_placeholders: int = 0
    comments_removed: int = 0
    likes_removed: int = 0
    reports_removed: int = 0
    follows_removed: int = 0
    identities_removed: int = 0
    tokens_removed: int = 0
    sites: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__.items())


def erasure_mode(site_id: int) -> str:
    mode = SitePrivacy.objects.filter(site_id=site_id).values_list("erasure", flat=True).first()
    return mode or settings.PORTABILITY_ERASURE_DEFAULT


def user_erase(*, user: User, actor: User | None) -> ErasureReport:
    """Erase ``user``'s data: the account is closed and stripped of everything that names the
    person; their comments become deleted placeholders with no text, no author, no IP address
    and no user agent, or are removed where the site says so and nothing hangs under them
    (``SitePrivacy``); their likes are withdrawn through the likes app's writer (counts, hot
    order and the Redis like state follow); their reports, follows, identities and tokens go.
    Sanctions stay (a moderator's record, about an account that no longer names anyone).
    Audited on every site the user had data on.

    Not one transaction (a big history would hold its subjects' locks for long): each step
    is idempotent, and erasing again finishes an erasure that was interrupted."""
    report = ErasureReport(user_id=user.pk, sites=sites_of(user))
    from comments.models import ApiToken, Follow

    # First, so that nothing new arrives while the rest is erased.
    User.objects.filter(pk=user.pk).update(is_active=False)
    report.tokens_removed = ApiToken.objects.filter(user=user).delete()[0]
    report.likes_removed = _likes_withdraw(user)
    placeholders, removed = _comments_erase(user, actor)
    report.comments_kept_as_placeholders, report.comments_removed = placeholders, removed
    from moderation.models import Report

    report.reports_removed = Report.objects.filter(user=user).delete()[0]
    report.follows_removed = (
        Follow.objects.filter(follower=user).delete()[0] + Follow.objects.filter(followee=user).delete()[0]
    )
    identities_removed = ExternalIdentity.objects.filter(user=user).delete()[0]
    answers: Sequence[tuple[object, object]] = hooks.user_erasing.send(sender=User, user_id=user.pk)
    report.identities_removed = identities_removed + sum(removed for _, removed in answers if isinstance(removed, int))
    user.moderated_sites.clear()
    User.objects.filter(pk=user.pk).update(
        username=f"erased-{user.pk}",
        first_name="",
        last_name="",
        email="",
        display_name="",
        avatar_url="",
        password=make_password(None),
        is_active=False,
        is_staff=False,
        is_superuser=False,
    )
    summary = (
        f"user {user.pk}: {placeholders} comments kept as placeholders, {removed} removed, {report.likes_removed} likes, "
        f"{report.reports_removed} reports, {report.identities_removed} identities"
    )
    for site_id in report.sites or [None]:
        audit(site_id=site_id, actor=actor, action="user_erase", reason=summary)
    user.refresh_from_db()
    return report


def _likes_withdraw(user: User) -> int:
    """Unlike everything ``user`` likes, through ``likes.services.like_actions_apply`` (the one
    writer of like rows and counts), with an action newer than any the user took: the likes in
    the rows, and those still waiting in Redis streams for the flush (which the flush will
    then find older than the withdrawal, and drop). Redis's state of each comment is dropped
    at once, and is rebuilt from the rows on next use; the comments are also marked stale, so
    the next flush drops them again should a reader have rebuilt one from rows read before the
    withdrawal."""
    from infra import redislink, streams
    from likes import keys, live, state_sync
    from likes.models import Like
    from likes.services import LikeAction, like_actions_apply

    rows = {
        c: (active, version)
        for c, active, version in Like.objects.filter(user=user).values_list("comment_id", "active", "version")
    }
    liked = {c for c, (active, _) in rows.items() if active}
    touched = set(liked)
    r = state_sync.client()
    if r is not None:
        try:
            for subject_id, _ in live.dirty_subjects(r):
                for entry_id, fields in streams.stream_entries(r, keys.events(subject_id)):
                    action = live.parse_action(fields)
                    if action is None or action[1] != user.pk:
                        continue
                    comment_id, liked_now = action[0], action[2]
                    touched.add(comment_id)
                    if streams.entry_version(entry_id) > rows.get(comment_id, (False, 0))[1]:
                        (liked.add if liked_now else liked.discard)(comment_id)
        except redislink.ERRORS as exc:
            redislink.mark_down(exc)
            r = None
    if not touched:
        return 0
    now_ms = live.now_ms()
    like_actions_apply(
        [LikeAction(comment_id=c, user_id=user.pk, liked=False, at_ms=now_ms) for c in sorted(touched)],
        mark_stale=bool(settings.LIKES_REDIS_URL),
    )
    if r is not None:
        places = dict(Comment.objects.filter(pk__in=touched).values_list("pk", "subject_id"))
        try:
            live.drop(r, list(places.items()))
        except redislink.ERRORS as exc:
            redislink.mark_down(exc)
    return len(liked)


def _comments_erase(user: User, actor: User | None) -> tuple[int, int]:
    """``(kept as placeholders, removed)``. Every comment goes through the core's one status
    transition (counters, the like state's flag and cached pages follow), then loses its text,
    author, IP address and user agent."""
    from comments.services import comment_set_status

    kept = 0
    removable: list[int] = []
    modes: dict[int, str] = {}
    after = 0
    while True:
        page = list(
            Comment.objects.filter(author=user, pk__gt=after)
            .order_by("pk")
            .values_list("pk", "status", "subject__site_id")[:1000]
        )
        if not page:
            break
        after = page[-1][0]
        for pk, status, _ in page:
            if status not in GONE_STATUSES:
                comment_set_status(comment_id=pk, to_status=Status.DELETED, actor=actor)
        ids = [pk for pk, _, _ in page]
        CommentContent.objects.filter(pk__in=ids).update(body="", html="", mentions=[], author_ip=None, user_agent="")
        Comment.objects.filter(pk__in=ids).update(author=None)
        for pk, _, site_id in page:
            if site_id not in modes:
                modes[site_id] = erasure_mode(site_id)
            if modes[site_id] == ErasureMode.REMOVE:
                removable.append(pk)
        kept += len(ids)
    removed = _remove_leaves(removable)
    return kept - removed, removed


def _remove_leaves(comment_ids: list[int]) -> int:
    """Delete those of ``comment_ids`` (deleted, uncounted) that nothing hangs under: no
    comment below them in the tree, and none answering them (at the depth cap a reply is its
    target's sibling, and would go with it). Removing one can free its parent: repeated until
    none is left to remove."""
    from infra import redislink
    from likes import live, state_sync

    removed = 0
    comment_table = table(Comment)
    while comment_ids:
        marks = ", ".join(["%s"] * len(comment_ids))
        leaves = [
            (pk, subject_id)
            # A reply is of its target's subject: said in the subquery, as Citus needs to
            # correlate it with the comment on the distribution column.
            for pk, subject_id in fetch(
                f"SELECT c.id, c.subject_id FROM {comment_table} c WHERE c.id IN ({marks}) "
                f"AND NOT EXISTS (SELECT 1 FROM {comment_table} d WHERE d.subject_id = c.subject_id AND d.path > c.path "
                f"AND d.path < c.path || %s) AND NOT EXISTS (SELECT 1 FROM {comment_table} r WHERE r.subject_id = c.subject_id AND r.reply_to_id = c.id)",
                [*comment_ids, paths.SUBTREE_END],
            )
        ]
        if not leaves:
            break
        Comment.objects.filter(pk__in=[pk for pk, _ in leaves]).delete()  # content, likes, reports go with them
        r = state_sync.client()
        if r is not None:
            try:
                live.drop(r, leaves)
            except redislink.ERRORS as exc:
                redislink.mark_down(exc)
        for subject_id in {s for _, s in leaves}:
            pages_change(subject_id)
        removed += len(leaves)
        gone = {pk for pk, _ in leaves}
        comment_ids = [pk for pk in comment_ids if pk not in gone]
    return removed
