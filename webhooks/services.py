"""Every write of webhooks: endpoints, the deliveries an event causes, and each attempt at a
delivery with its retry schedule (exponential backoff with jitter for ``WEBHOOKS_RETRY_FOR``
seconds, then failed). Services never start a task: ``tasks.py`` does, from what they return."""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from comments.exceptions import InvalidInput
from comments.models import Site
from infra import outbound

from . import queries, sending, signing
from .events import Event
from .models import Delivery, DeliveryState, Endpoint, EventType

# --- endpoints -----------------------------------------------------------------------------


def endpoint_url_check(url: str) -> str:
    """An endpoint's URL, or ``InvalidInput``: http or https, with a host, no credentials, and
    not certainly inside the service's network (an IP address that is not public, or
    ``localhost``; allowed with ``WEBHOOKS_DELIVER_PRIVATE``). A name is not resolved here: what
    it resolves to may change, so each delivery checks it again (``infra.outbound``)."""
    url = (url or "").strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a port out of range)
    except ValueError:
        raise InvalidInput("Not a valid URL.", fields={"url": ["Not a valid URL."]}) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > 2000:
        raise InvalidInput(
            "An endpoint's URL must be an http or https URL.", fields={"url": ["Use an http:// or https:// URL."]}
        )
    if parts.username or parts.password:
        raise InvalidInput(
            "An endpoint's URL may not hold credentials.", fields={"url": ["No user or password in the URL."]}
        )
    try:
        outbound.host_check(parts.hostname, allow_private=settings.WEBHOOKS_DELIVER_PRIVATE)
    except outbound.DestinationRefused as exc:
        raise InvalidInput(
            "An endpoint's URL must be on a public address.",
            fields={"url": [f"Use a public address: {exc}."]},
        ) from None
    return url


def endpoint_events_check(events: object) -> list[str]:
    if not isinstance(events, (list, tuple)) or not events or any(e not in EventType.values for e in events):
        raise InvalidInput(
            "Choose at least one event.", fields={"events": [f"One or more of: {', '.join(EventType.values)}."]}
        )
    return [e for e in EventType.values if e in events]


def endpoint_create(
    *, site: Site, url: str, events: list[str], description: str = "", secret: str | None = None
) -> Endpoint:
    """A new endpoint of ``site``, with a new secret unless one is given (``whsec_…``)."""
    if secret is not None and not secret.startswith(signing.PREFIX):
        raise InvalidInput("A secret starts with whsec_.", fields={"secret": ["Starts with whsec_."]})
    return Endpoint.objects.create(
        site=site,
        url=endpoint_url_check(url),
        events=endpoint_events_check(events),
        description=description[:200],
        secret=secret or signing.secret_new(),
    )


# --- deliveries ----------------------------------------------------------------------------


def deliveries_create(*, event: Event) -> list[int]:
    """A pending delivery of ``event`` to each endpoint of its site that wants it; returns the
    ids of those written now. Idempotent: the same event again writes (and returns) none."""
    site_id = queries.event_site(event=event)
    endpoints = queries.endpoints_wanting(site_id=site_id, event_type=event.type) if site_id is not None else []
    body = queries.event_body(event=event) if endpoints else None
    if body is None:
        return []
    now = timezone.now()
    with transaction.atomic():
        Delivery.objects.bulk_create(
            [
                Delivery(
                    endpoint=e,
                    event_id=event.id,
                    event_type=event.type,
                    body=body,
                    chain_started_at=now,
                    next_attempt_at=now,
                )
                for e in endpoints
            ],
            ignore_conflicts=True,
        )
        # ``ignore_conflicts`` leaves no ids: those written now are the untried ones created now.
        return list(
            Delivery.objects.filter(
                event_id=event.id, endpoint__in=endpoints, attempts=0, created_at__gte=now
            ).values_list("pk", flat=True)
        )


def retry_delay(attempts: int) -> float:
    """Seconds before the retry that follows ``attempts`` failed attempts: the base doubled each
    time up to the cap, then between half and all of that ("equal jitter"), so that endpoints
    that failed together are not retried together."""
    ceiling = min(settings.WEBHOOKS_RETRY_BASE * 2 ** (attempts - 1), settings.WEBHOOKS_RETRY_MAX)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def claim_seconds() -> float:
    """How long an attempt may take before another worker may make it: the request's timeout
    covers each wait on the socket (connect, send, the answer's head, the excerpt), so twice it
    and a margin."""
    return 2 * settings.WEBHOOKS_TIMEOUT + 5


def _claim(delivery_id: int, now: datetime) -> bool:
    """Take the attempt that is due: one conditional UPDATE, so that of a task and its retry,
    or two workers, one attempts it. The claim lapses (the delivery is due again) if the worker
    dies before writing the outcome."""
    lapse = now + timedelta(seconds=claim_seconds())
    return bool(
        Delivery.objects.filter(pk=delivery_id, state=DeliveryState.PENDING, next_attempt_at__lte=now).update(
            next_attempt_at=lapse
        )
    )


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> str | None:
    """Post the delivery if it is due, and write the outcome: delivered on a 2xx, else a retry
    after ``retry_delay`` or, past ``WEBHOOKS_RETRY_FOR`` from the chain's start or to a
    destination refused (``infra.outbound``: not a public address), failed.
    Returns the state written, None when there was nothing to do (not due, delivered, failed,
    or another worker holds it). Call outside a transaction: the claim must commit before the
    request goes out."""
    now = now or timezone.now()
    if not _claim(delivery_id, now):
        return None
    delivery = Delivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    body = delivery.body.encode()
    answer = sending.post(
        endpoint.url,
        body,
        signing.headers(endpoint.secret, delivery.event_id, int(time.time()), body),
        timeout=settings.WEBHOOKS_TIMEOUT,
        allow_private=settings.WEBHOOKS_DELIVER_PRIVATE,
    )
    attempts = delivery.attempts + 1
    if answer.ok:
        state, next_at = DeliveryState.DELIVERED, None
    else:
        next_at = now + timedelta(seconds=retry_delay(attempts))
        # A refused destination is not retried: the rule will refuse it again (a person may
        # redeliver once the endpoint or the setting changed).
        gave_up = (
            answer.refused
            or next_at > delivery.chain_started_at + timedelta(seconds=settings.WEBHOOKS_RETRY_FOR)
            or not endpoint.active
        )
        state, next_at = (DeliveryState.FAILED, None) if gave_up else (DeliveryState.PENDING, next_at)
    Delivery.objects.filter(pk=delivery_id).update(
        state=state,
        attempts=attempts,
        next_attempt_at=next_at,
        last_attempt_at=now,
        response_code=answer.code,
        response_excerpt=answer.excerpt,
        error=answer.error,
    )
    return state


def delivery_redeliver(*, delivery: Delivery) -> None:
    """Start the delivery's chain again (a person asked, from the admin or the console): due
    now, with a day of retries of its own. The same body and ``webhook-id``: a receiver that
    already has it knows it."""
    now = timezone.now()
    Delivery.objects.filter(pk=delivery.pk).update(
        state=DeliveryState.PENDING, chain_started_at=now, next_attempt_at=now
    )
