"""Celery tasks of the portability app: thin, idempotent, the services do the work."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(name="portability.scrub_ip_addresses", acks_late=True, ignore_result=True)
def scrub_ip_addresses() -> int:
    """The retention job (beat, every ``PORTABILITY_SCRUB_INTERVAL``): authors' IP addresses and
    user agents older than ``PORTABILITY_IP_RETENTION_DAYS`` are removed."""
    return services.ip_addresses_scrub()
