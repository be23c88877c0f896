"""The Celery app: ``celery -A config worker -B`` starts a worker with beat."""

import os

from celery import Celery, Task

from comments.replicas import primary_reads

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
