"""The Celery app: ``celery -A config worker -B`` starts a worker with beat."""

import os
import sys

from celery import Celery, Task, signals
from django.db import close_old_connections

from infra.replicas import primary_reads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class PrimaryReadsTask(Task):
    """Every task reads the primary (the flush, the fan-out, the checks write from what they
    read), also when it runs eagerly inside a request that may read a replica."""

    def __call__(self, *args, **kwargs):
        with primary_reads():
            return super().__call__(*args, **kwargs)


app = Celery("config", task_cls=PrimaryReadsTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Tasks keep their database connections as requests do. Celery's Django fixup closes every
# connection before and after each task unless told to reuse them for a number of tasks, so a
# worker connected to PostgreSQL anew for each: every beat tick's flush forked a backend, and
# that backend's first statements loaded its caches and planned from nothing. Under load that
# cost PostgreSQL more than the flush's own statements. The fixup is told to close them never
# (a pool process still drops what it inherited at its fork); Django's own rule runs around
# each task instead, as around each request: a connection is dropped when it broke or outlived
# ``CONN_MAX_AGE``, and checked before its next use with ``CONN_HEALTH_CHECKS``.
app.conf.CELERY_DB_REUSE_MAX = sys.maxsize


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(task=None, **kwargs) -> None:
    if task is not None and getattr(task.request, "is_eager", False):
        return  # run inside a request (the embedded default): its connection is the request's
    close_old_connections()
