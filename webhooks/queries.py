"""Every read of webhooks: the body an event is delivered with, and the endpoints and deliveries
a console page or a delivery shows."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone as django_timezone

from comments.exceptions import NotFound
from comments.models import Comment, User
from comments.queries import Viewer, present_comments, present_user
from infra.encoding import dumps
from moderation.models import Report

from .events import Event
from .models import Delivery, DeliveryState, Endpoint, EventType

RECENT_DELIVERIES = 50  # on an endpoint's console page


def _comment_data(comment: Comment) -> dict:
    """The comment as the API shows it to a moderator (its true status, its body however
    held), without what only means something to one reader (``liked``)."""
    shown = present_comments(rows=[comment], viewer=Viewer(user=None, is_moderator=True))[comment.pk]
    shown.pop("liked", None)
    return shown


def _subject_data(comment: Comment) -> dict:
    s = comment.subject
    return {"id": s.pk, "key": s.key, "title": s.title, "url": s.url or None, "state": s.state}


def event_body(*, event: Event) -> str | None:
    """The JSON ``event`` is delivered with (to every endpoint that wants it), read now, after
    its commit; None when what it is about is gone (a comment or report erased since)."""
    report = None
    if event.type == EventType.REPORT_CREATED:
        report = Report.objects.filter(pk=event.target_id).select_related("user").first()
        if report is None:
            return None
        comments = Comment.objects.filter(pk=report.comment_id, subject_id=report.subject_id)
    else:
        comments = Comment.objects.filter(pk=event.target_id)
    comment = comments.select_related("subject__site", "author").first()
    if comment is None:
        return None
    data: dict[str, object] = {
        "site": comment.subject.site.key,
        "subject": _subject_data(comment),
        "comment": _comment_data(comment),
    }
    if event.type == EventType.COMMENT_STATUS_CHANGED:
        actor = User.objects.filter(pk=event.actor_id).first() if event.actor_id else None
        data.update(from_status=event.from_status, to_status=event.to_status, actor=present_user(actor))
    if report is not None:
        data["report"] = {
            "id": report.pk,
            "reason": report.reason,
            "detail": report.detail,
            "reporter": present_user(report.user),
            "created_at": report.created_at,
        }
    envelope = {"type": event.type, "timestamp": datetime.fromtimestamp(event.at, tz=UTC), "data": data}
    return dumps(envelope).decode()


def any_endpoint_active() -> bool:
    """Whether any site has an active endpoint: a batch of events costs one query where none has."""
    return Endpoint.objects.filter(active=True).exists()


def event_site(*, event: Event) -> int | None:
    """The site the event's comment (or reported comment) belongs to; None when it is gone."""
    comments = Comment.objects.filter(pk=event.target_id)
    if event.type == EventType.REPORT_CREATED:
        # The report first, then its comment on its subject's shard: on Citus a report and its
        # comment join only on the subject, which the report's id does not give.
        reported = Report.objects.filter(pk=event.target_id).values_list("comment_id", "subject_id").first()
        if reported is None:
            return None
        comments = Comment.objects.filter(pk=reported[0], subject_id=reported[1])
    return comments.values_list("subject__site_id", flat=True).first()


def endpoints_wanting(*, site_id: int, event_type: str) -> list[Endpoint]:
    """The site's active endpoints that asked for ``event_type``: only that site's, ever."""
    return [e for e in Endpoint.objects.filter(site_id=site_id, active=True).order_by("pk") if e.wants(event_type)]


def site_endpoints(*, site_id: int) -> list[Endpoint]:
    return list(Endpoint.objects.filter(site_id=site_id).order_by("pk"))


def recent_deliveries(*, site_id: int, with_answers: bool = False, limit: int = RECENT_DELIVERIES) -> list[Delivery]:
    """The site's latest deliveries, newest first, with their endpoints (one query). Without
    ``with_answers`` (for staff only) the receivers' answers are blanked: not read, so not shown."""
    rows = list(
        Delivery.objects.filter(endpoint__site_id=site_id)
        .select_related("endpoint")
        .defer("body", *(() if with_answers else ("response_excerpt",)))
        .order_by("-pk")[:limit]
    )
    if not with_answers:
        for row in rows:
            row.response_excerpt = ""  # set, so that reading it loads nothing
    return rows


def delivery_of_site(*, delivery_id: int, site_id: int) -> Delivery:
    """A delivery of one of ``site_id``'s endpoints; ``NotFound`` for any other."""
    delivery = Delivery.objects.filter(pk=delivery_id, endpoint__site_id=site_id).first()
    if delivery is None:
        raise NotFound("Unknown delivery.")
    return delivery


def deliveries_due(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Pending deliveries whose attempt is due, the longest waiting first."""
    return list(
        Delivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now or django_timezone.now())
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
