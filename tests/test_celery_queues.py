"""Every Celery task goes to a queue of its kind (config/settings.py), so one backlog never
starves another, and the deployment's worker consumes every queue."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from config.celery import app

ROOT = Path(__file__).resolve().parent.parent
PROJECT_APPS = [name for name in settings.INSTALLED_APPS if (ROOT / name).is_dir()]
TASK_NAME = re.compile(r"""shared_task\(\s*name\s*=\s*["']([^"']+)["']""")


def tasks_in_source() -> dict[str, Path]:
    """Every task the project's apps declare, by name, found in their source (a task in a module
    that autodiscovery does not import would never be registered on a worker)."""
    found = {}
    for app_name in [*PROJECT_APPS, "config"]:
        for path in (ROOT / app_name).rglob("*.py"):
            for name in TASK_NAME.findall(path.read_text()):
                found[name] = path
    return found


def queue_of(task_name: str) -> str | None:
    """The queue the task is sent to by an explicit route (None: no route names it)."""
    route = app.amqp.router.route({}, task_name)
    routed = any(
        re.fullmatch(pattern.replace(".", r"\.").replace("*", ".*"), task_name)
        for pattern in settings.CELERY_TASK_ROUTES
    )
    return route["queue"].name if routed else None


def test_every_task_of_every_app_is_registered_and_routed_to_a_declared_queue():
    app.loader.import_default_modules()
    declared = {queue.name for queue in settings.CELERY_TASK_QUEUES}
    found = tasks_in_source()
    assert {
        "likes.flush",
        "moderation.recheck_queued",
        "notifications.drain_events",
        "portability.scrub_ip_addresses",
    } <= set(found)
    unregistered = sorted(name for name in found if name not in app.tasks)
    assert unregistered == []
    unrouted = {name: queue_of(name) for name in found if queue_of(name) not in declared}
    assert unrouted == {}


def test_each_kind_of_work_has_its_own_queue():
    assert queue_of("likes.flush") == "likes"
    assert queue_of("likes.rebuild") == "likes"
    assert queue_of("moderation.recheck_queued") == "moderation"
    assert queue_of("moderation.recheck_comment") == "moderation"
    assert queue_of("notifications.drain_events") == "notifications"
    assert queue_of("notifications.handle_event") == "notifications"
    assert queue_of("notifications.send_emails") == "notifications"
    assert queue_of("notifications.send_digests") == "notifications"
    assert queue_of("notifications.review_queues") == "notifications"
    assert queue_of("webhooks.deliver") == "webhooks"
    assert queue_of("webhooks.drain_events") == "webhooks"
    assert queue_of("webhooks.retry_due") == "webhooks"
    assert queue_of("portability.scrub_ip_addresses") == "imports"
    assert queue_of("comments.reconcile_recent") == "default"


def test_every_beat_entry_names_a_registered_task():
    app.loader.import_default_modules()
    assert sorted(str(e["task"]) for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] not in app.tasks) == []


def test_the_deployments_worker_consumes_every_queue():
    unit = (ROOT / "deploy" / "systemd" / "comments-worker.service").read_text()
    command = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    consumed = set(re.search(r"-Q\s+(\S+)", command).group(1).split(","))
    assert consumed == {queue.name for queue in settings.CELERY_TASK_QUEUES}


def test_the_images_worker_consumes_every_queue():
    entrypoint = (ROOT / "deploy" / "container" / "entrypoint").read_text()
    consumed = set(re.search(r"WORKER_QUEUES:-([^}]+)\}", entrypoint).group(1).split(","))
    assert consumed == {queue.name for queue in settings.CELERY_TASK_QUEUES}
