"""Retention: authors' IP addresses and user agents removed once older than the retention
period (the beat's ``portability.scrub_ip_addresses``)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from comments.models import Comment, CommentContent, Subject

from ..sql import fetch, param_time, table
from .audit import audit

PAGE = 2_000  # comments scrubbed per UPDATE


def ip_addresses_scrub(*, older_than_days: int | None = None) -> int:
    """Remove the IP address and user agent of every comment older than the retention period
    (``PORTABILITY_IP_RETENTION_DAYS``; 0 keeps them). Keyset pages over the primary key up to
    the first id of the cutoff (ids are time-ordered), each page one UPDATE; imported history,
    whose ids are packed before the service's first day, is checked by its date. Audited per
    site. Returns how many comments were scrubbed."""
    from comments.ids import id_floor_at

    days = settings.PORTABILITY_IP_RETENTION_DAYS if older_than_days is None else older_than_days
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    below = id_floor_at(cutoff)
    comment_table, content_table = table(Comment), table(CommentContent)
    scrubbed: Counter = Counter()
    after = -1
    while True:
        rows = fetch(
            # On Citus, the content is joined on the subject as well as the id (joins of
            # distributed tables pair their distribution columns).
            f"SELECT c.id, c.subject_id FROM {comment_table} c "
            f"JOIN {content_table} cc ON cc.comment_id = c.id AND cc.subject_id = c.subject_id "
            f"WHERE c.id > %s AND c.id < %s AND c.created_at < %s AND (cc.author_ip IS NOT NULL OR cc.user_agent <> '') "
            f"ORDER BY c.id LIMIT {PAGE}",
            [after, below, param_time(cutoff)],
        )
        if not rows:
            break
        after = rows[-1][0]
        CommentContent.objects.filter(pk__in=[pk for pk, _ in rows]).update(author_ip=None, user_agent="")
        scrubbed.update(subject_id for _, subject_id in rows)
    by_site: Counter = Counter()
    for subject_id, site_id in Subject.objects.filter(pk__in=list(scrubbed)).values_list("pk", "site_id"):
        by_site[site_id] += scrubbed[subject_id]
    for site_id, count in sorted(by_site.items()):
        audit(
            site_id=site_id,
            actor=None,
            action="ip_retention",
            reason=f"IP addresses and user agents of {count} comments older than {days} days removed",
        )
    return sum(scrubbed.values())
