"""The content check run on every comment create and edit (registered with
``comments.hooks.register_content_check``), in this order:

1. sanctions: a ban refuses (``403 banned``), a shadow ban stores the comment as ``shadow``,
   trust skips pre-moderation and the spam signals;
2. the site policy: pre-moderation holds comments of untrusted users as ``pending``;
3. the word filter: ``block`` refuses (``400 content_blocked``), ``review`` holds as
   ``pending``, ``mask`` replaces the match by ``*``; trust never passes a blocked word;
4. spam signals: too many links, or the same text posted again by the same user within
   minutes, hold as ``pending``.

The reasons of a hold travel with the decision; the review task is opened from them once the
comment is stored (``services.review_task_open`` on ``comment_posted``/``comment_edited``).
"""

from __future__ import annotations

import hashlib
import re

from django.conf import settings
from django.core.cache import cache

from comments.exceptions import Banned, ContentBlocked
from comments.hooks import ContentCheck, ContentDecision
from comments.models import ModerationPolicy, Status
from infra import sharedcache

from . import words
from .queries import standing_of

LINK_RE = re.compile(r"(?i)\b(?:https?://|www\.)")


def check_content(check: ContentCheck, decision: ContentDecision) -> ContentDecision:
    standing = set() if check.is_moderator else standing_of(site_id=check.site.pk, user_id=check.author.pk)
    if "ban" in standing:
        raise Banned()
    trusted = check.is_moderator or "trust" in standing
    reasons = list(decision.reasons)
    body = decision.body

    global_words, site_words = words.filters_for(check.site.pk)
    hits = [*global_words.scan(body), *site_words.scan(body)]
    if any(h.action == "block" for h in hits):
        blocked = sorted({h.word for h in hits if h.action == "block"})
        raise ContentBlocked(
            "The comment contains words that are not allowed.", fields={"body": [f"Not allowed: {', '.join(blocked)}."]}
        )
    masked = [h for h in hits if h.action == "mask"]
    if masked:
        body = global_words.mask(body, masked)  # masking needs only the spans, from either list
    reasons += [f"word:{w}" for w in sorted({h.word for h in hits if h.action == "review"})]

    if not trusted:
        if check.comment is None and check.site.moderation == ModerationPolicy.PRE:
            reasons.append("policy:pre")
        reasons += _spam_signals(check)

    status = decision.status
    if "shadow_ban" in standing:
        status = Status.SHADOW
    elif reasons and not check.is_moderator:
        status = Status.PENDING
    elif check.comment is None and trusted and status == Status.PENDING:
        status = Status.PUBLISHED  # trust skips the site's pre-moderation
    return ContentDecision(status=status, body=body, reasons=_unique(reasons))


def _spam_signals(check: ContentCheck) -> list[str]:
    found = []
    if len(LINK_RE.findall(check.body)) > settings.MODERATION_MAX_LINKS:
        found.append("spam:links")
    if check.comment is None and settings.MODERATION_REPEAT_WINDOW > 0:
        digest = hashlib.sha256(" ".join(check.body.split()).casefold().encode()).hexdigest()[:32]
        key = f"moderation:recent:{check.site.pk}:{check.author.pk}:{digest}"
        # Without the cache (an outage) no text counts as repeated.
        if not sharedcache.call(lambda: cache.add(key, 1, settings.MODERATION_REPEAT_WINDOW), True):
            found.append("spam:repeat")
    return found


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
