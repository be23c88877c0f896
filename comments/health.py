"""``/healthz``: what each backing service answers, measured, not assumed. ``/readyz``: whether
this process may be given traffic (a load balancer's check).

A process is ready once it has warmed up (``process_warmed``: gunicorn's workers, through
``config.warmup``, before their first request) and its database and Redis have answered; from
then on it stays ready. A dependency that fails later fails it for every process alike, and the
service answers through it (pages from the cache while the database is down, likes and pages
from the database while Redis is): taking every host out of the load balancer then would turn a
degraded service into none. ``/healthz`` goes on reporting such an outage.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

from infra import redislink, replicas


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


def like_state_state() -> str:
    if not settings.LIKES_REDIS_URL:
        return "absent"
    r = redislink.client()
    if r is None:  # this process found it down a moment ago
        return "down"
    try:
        r.ping()
        return "ok"
    except redislink.ERRORS:
        return "down"


# --- readiness --------------------------------------------------------------------------------

_warmed = False
_ready = False


def process_warmed() -> None:
    """This process has loaded what its first requests would load (``config.warmup``)."""
    global _warmed
    _warmed = True


def reset_readiness() -> None:
    """Back to a process that has just started (tests)."""
    global _warmed, _ready
    _warmed = _ready = False


def readyz(request):
    """``200 {"ready": true}`` once this process has warmed up and its database, the cache's
    Redis and the like state's Redis (each one configured) have answered; ``503`` before, with
    what it still waits for. Once ready, answered without asking anything (it is asked every
    few seconds by every load balancer)."""
    global _ready
    if _ready:
        return JsonResponse({"ready": True})
    report: dict[str, object] = {
        "warm": "ok" if _warmed else "warming",
        "database": database_state(),
        "cache": cache_state(),
        "like_state": like_state_state(),
    }
    _ready = all(state in {"ok", "absent"} for state in report.values())
    return JsonResponse({"ready": _ready, **report}, status=200 if _ready else 503)
