"""Every read of the moderation app."""

from __future__ import annotations

import time

from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from comments import rowsql
from comments.exceptions import InvalidInput, PermissionDenied
from comments.queries import (
    Page,
    Viewer,
    decode_cursor,
    encode_cursor,
    is_site_moderator,
    present_comments,
    present_user,
    site_by_key,
)

from .models import AuditEntry, ReviewTask, Sanction, WordEntry


def standing_cache_key(site_id: int, user_id: int) -> str:
    return f"moderation:standing:{site_id}:{user_id}"


def standing_of(*, site_id: int, user_id: int) -> set[str]:
    """The kinds of sanction in force for ``user_id`` on the site now. Every like, report,
    post and edit asks, so the sanctions (with their expiry) are kept in the shared cache,
    dropped by every sanction change; expired ones are simply not counted, so no job has to
    end them."""
    key = standing_cache_key(site_id, user_id)
    sanctions = cache.get(key)
    if sanctions is None:
        sanctions = [
            (kind, until.timestamp() if until else None)
            for kind, until in Sanction.objects.filter(site_id=site_id, user_id=user_id).values_list("kind", "until")
        ]
        cache.set(key, sanctions, 300)
    now = time.time()
    return {kind for kind, until in sanctions if until is None or until > now}


def _viewer_moderating(user, site_key: str):
    """The site and a moderator's viewer of it; ``PermissionDenied`` for anyone else."""
    site = site_by_key(site_key)
    if not is_site_moderator(user, site):
        raise PermissionDenied("Only moderators of this site may see this.")
    return site, Viewer(user=user, is_moderator=True)


def review_queue(*, user, site_key: str, state: str, limit: int, cursor: str | None) -> Page:
    """A site's review tasks, highest priority first, then oldest, each with its comment as a
    moderator sees it. Keyset-paginated on (priority, id): four queries whatever the page."""
    site, viewer = _viewer_moderating(user, site_key)
    scope = f"queue:{site.pk}:{state}"
    position = decode_cursor(cursor, scope)
    tasks = ReviewTask.objects.filter(site=site, state=state).select_related("claimed_by")
    if position is not None:
        priority, last_id = position.get("p"), position.get("i")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (priority, last_id)):
            raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
        tasks = tasks.filter(Q(priority__lt=priority) | Q(priority=priority, id__gt=last_id))
    found = list(tasks.order_by("-priority", "id")[: limit + 1])
    page = found[:limit]
    rows = {c.pk: c for c in rowsql.fetch_ids({t.comment_id for t in page})}
    shown = present_comments(rows.values(), viewer)
    items = [
        {
            "id": t.pk,
            "comment": shown.get(t.comment_id),
            "reasons": t.reasons,
            "priority": t.priority,
            "state": t.state,
            "claimed_by": present_user(t.claimed_by) if t.claimed_by_id and t.claim_expires_at and t.claim_expires_at > timezone.now() else None,
            "created_at": t.created_at,
            "decided_at": t.decided_at,
            "decision": t.decision or None,
        }
        for t in page
    ]
    next_cursor = encode_cursor(scope, {"p": page[-1].priority, "i": page[-1].pk}) if len(found) > limit else None
    return Page(items=items, next_cursor=next_cursor)


def audit_log(*, user, site_key: str, limit: int, cursor: str | None) -> Page:
    """A site's audit entries, newest first (staff also see changes to the global list)."""
    site, _ = _viewer_moderating(user, site_key)
    scope = f"log:{site.pk}"
    position = decode_cursor(cursor, scope)
    entries = AuditEntry.objects.select_related("actor")
    entries = entries.filter(Q(site=site) | Q(site__isnull=True)) if user.is_staff else entries.filter(site=site)
    if position is not None:
        last_id = position.get("i")
        if not isinstance(last_id, int) or isinstance(last_id, bool):
            raise InvalidInput("Malformed cursor.", fields={"cursor": ["Malformed cursor."]})
        entries = entries.filter(id__lt=last_id)
    found = list(entries.order_by("-id")[: limit + 1])
    page = found[:limit]
    items = [
        {
            "id": e.pk, "actor": present_user(e.actor), "action": e.action, "comment_id": e.comment_id,
            "from_status": e.from_status, "to_status": e.to_status, "reason": e.reason, "created_at": e.created_at,
        }
        for e in page
    ]
    return Page(items=items, next_cursor=encode_cursor(scope, {"i": page[-1].pk}) if len(found) > limit else None)


def word_entries(*, user, site_key: str | None) -> list[WordEntry]:
    """The global list and, with ``site_key``, that site's list (its moderators only)."""
    if site_key is None:
        if not user.is_staff:
            raise PermissionDenied("Name a site you moderate.")
        return list(WordEntry.objects.filter(site__isnull=True).order_by("id"))
    site, _ = _viewer_moderating(user, site_key)
    return list(WordEntry.objects.filter(Q(site=site) | Q(site__isnull=True)).select_related("site").order_by("id"))
