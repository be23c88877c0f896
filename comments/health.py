"""``/healthz``: what each backing service answers, measured, not assumed."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

from infra import replicas


def database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return "ok"
    except Exception:  # noqa: BLE001 - a probe: any failure is "down"
        return "down"


def cache_state() -> str:
    if not settings.REDIS_URL:
        return "absent"
    try:
        cache.set("healthz", "1", 5)
        return "ok" if cache.get("healthz") == "1" else "down"
    except Exception:  # noqa: BLE001 - a probe: any failure is "down"
        return "down"


def broker_state() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return "eager"
    # The project's Celery app, which the composition root (config.celery) made the current one.
    from celery import current_app

    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return "ok"
    except Exception:  # noqa: BLE001 - a probe: any failure is "down"
        return "down"


def healthz(request):
    report: dict[str, object] = {"database": database_state(), "cache": cache_state(), "broker": broker_state()}
    if settings.DATABASE_REPLICAS:
        # Readers fall back to the primary: a replica's state never fails the check.
        report["replicas"] = replicas.replica_states()
    return JsonResponse(report, status=200 if report["database"] == "ok" else 503)
