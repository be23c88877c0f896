"""Exports: a site's comments written out (read in ``portability.queries``) and the audit of
who took what: a site's export, a person's own data."""

from __future__ import annotations

from typing import BinaryIO

from comments.models import Comment, ExternalIdentity, Site, Subject, User
from infra import replicas

from .audit import audit


def site_export(*, site: Site, format: str, out: BinaryIO, actor: User | None = None) -> dict:
    """Write the site's export (``format`` json or disqus) to the binary stream ``out``, and
    audit it; returns what it held."""
    from .. import queries

    chunks = queries.site_export_json(site=site) if format == "json" else queries.site_export_disqus(site=site)
    for chunk in chunks:
        out.write(chunk)
    written = {
        "subjects": Subject.objects.filter(site=site).count(),
        "comments": Comment.objects.filter(subject__site=site).count(),
    }
    audit(
        site_id=site.pk,
        actor=actor,
        action="data_export",
        reason=f"{format}: {written['subjects']} subjects, {written['comments']} comments",
    )
    return written


@replicas.primary_reads()  # asked in a GET, where reads may go to a replica: the audit must be exact
def user_data_exported(*, user: User, actor: User | None) -> None:
    """Audit that ``user``'s data was handed out (by themself or by staff): one entry on every
    site they have data on."""
    reason = f"user {user.pk}" + ("" if actor is not None and actor.pk == user.pk else " (by staff)")
    for site_id in sites_of(user) or [None]:  # type: ignore[list-item]  # None: the global audit
        audit(site_id=site_id, actor=actor, action="user_data_export", reason=reason)


def sites_of(user: User) -> list[int]:
    """The sites where ``user`` has comments, likes, reports, sanctions or an identity."""
    from likes.models import Like
    from moderation.models import Report, Sanction

    sites = set(Comment.objects.filter(author=user).values_list("subject__site_id", flat=True).distinct())
    sites |= set(
        Subject.objects.filter(pk__in=Like.objects.filter(user=user).values("subject_id")).values_list(
            "site_id", flat=True
        )
    )
    sites |= set(
        Subject.objects.filter(pk__in=Report.objects.filter(user=user).values("subject_id")).values_list(
            "site_id", flat=True
        )
    )
    sites |= set(Sanction.objects.filter(user=user).values_list("site_id", flat=True))
    sites |= set(ExternalIdentity.objects.filter(user=user).values_list("site_id", flat=True))
    return sorted(sites)
