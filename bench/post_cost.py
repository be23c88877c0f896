"""What a post costs the server's CPU, piece by piece, and the least an asynchronous write could
bring it to: a profiling tool behind a claim in ``docs/benchmarks.md``, not a benchmark.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 LIKES_REDIS_URL=redis://127.0.0.1:6379/9 \\
    .venv/bin/python -m bench.post_cost

Requests go straight to Django's WSGI handler in this process, one at a time (no HTTP server,
no threads), with ``bench.http``'s settings and dataset (run ``bench.http`` once first). Each
variant's figure is the CPU time per request over ``--requests`` requests of this process and of
its PostgreSQL backend (read from /proc: a server on this machine):

- *floor*: the empty authenticated DRF view ``bench.http`` compares posts with;
- *post*: ``POST /api/v1/subjects/<the bench subject>/comments``, as served;
- *post, nothing written*: the same request with the insert and everything run after the commit
  (page versions, the empty like state, the queued second check) replaced by nothing;
- *post, nothing written, subject known*: also without the subject's lookup.

The last two are what no write design can go below: an asynchronous write still has to
authenticate, validate, run the moderation checks and render the Markdown before it answers
``201`` with the comment's status and HTML. Then the worker's share of a post: what the posts
handed on (second checks, notifications and webhooks events) drained in this process as the beat
tasks drain it. The posts are removed and the counters reconciled at the end.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from unittest import mock

VARIANTS = ("floor", "post", "post, nothing written", "post, nothing written, subject known")


def backend_cpu() -> float:
    """CPU seconds of this process's PostgreSQL backend so far (a server on this machine), from
    /proc; 0 where it cannot be read."""
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_share(posts: int) -> tuple[float, float]:
    """``(Python ms, PostgreSQL ms)`` per post of draining what ``posts`` posts handed on."""
    from moderation import rechecks
    from notifications import jobs as notification_jobs
    from webhooks import jobs as webhook_jobs

    started, backend = time.process_time(), backend_cpu()
    rechecks.rechecks_run_queued()  # each drains its stream until it is empty
    notification_jobs.events_drain()
    webhook_jobs.events_drain()
    return (time.process_time() - started) / posts * 1000, (backend_cpu() - backend) / posts * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="timed requests per variant (1000)")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.http_settings")
    os.environ.setdefault("RATE_LIMITS", "off")
    os.environ.setdefault("MODERATION_BURST_LIMIT", "1000000")
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler

    from bench.http import AUTH_EMPTY_PATH
    from bench.likes import issue_tokens
    from bench.seed import bench_site, purge_comments
    from comments import hooks, queries, services
    from comments.models import Subject, User
    from comments.services import comment as comment_service

    subject = Subject.objects.filter(site=bench_site()).order_by("-comment_count").first()
    if subject is None:
        sys.exit("no bench dataset: run `python -m bench.http` once first")
    poster, _ = User.objects.get_or_create(username="postcost-poster")
    token = issue_tokens([poster.pk])[0]
    app = WSGIHandler()
    sent = iter(range(10**9))

    def request(path: str) -> None:
        body = json.dumps({"body": f"post_cost {time.time_ns()} {next(sent)}"}).encode()
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.url_scheme": "http",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "HTTP_ACCEPT": "application/json",
            "HTTP_AUTHORIZATION": f"Bearer {token}",
        }
        statuses = []
        response = app(environ, lambda status, headers, *exc: statuses.append(status))
        b"".join(response)
        response.close()
        if not statuses[0].startswith(("200", "201")):
            sys.exit(f"{path}: {statuses[0]}")

    def cpu_ms_per_request(name: str, path: str) -> float:
        for _ in range(50):  # warm-up: connections, prepared statements, process caches
            request(path)
        started, backend = time.process_time(), backend_cpu()
        for _ in range(args.requests):
            request(path)
        database_ms[name] = (backend_cpu() - backend) / args.requests * 1000
        return (time.process_time() - started) / args.requests * 1000 + database_ms[name]

    post_path = f"/api/v1/subjects/{subject.pk}/comments"
    database_ms: dict[str, float] = {}

    def store_nothing(new, *, closed_ok):
        for item in new:
            item.comment.floor = 1
        return services.Stored()

    nothing_written: tuple = (
        mock.patch.object(comment_service, "comments_store", store_nothing),
        mock.patch.object(hooks.comment_posted, "send", lambda *a, **k: []),
    )
    known = queries.subject_for_viewer(subject_id=subject.pk, user=poster)
    subject_known = mock.patch.object(queries, "subject_for_viewer", lambda *, subject_id, user: known)
    figures = {}
    try:
        for name, path in (("floor", AUTH_EMPTY_PATH), ("post", post_path)):
            figures[name] = cpu_ms_per_request(name, path)
        worker_python, worker_database = worker_share(args.requests + 50)
        with nothing_written[0], nothing_written[1]:
            figures[VARIANTS[2]] = cpu_ms_per_request(VARIANTS[2], post_path)
            with subject_known:
                figures[VARIANTS[3]] = cpu_ms_per_request(VARIANTS[3], post_path)
    finally:
        removed = purge_comments("subject_id = %s AND author_id = %s", [subject.pk, poster.pk])
        services.subject_reconcile_counters(subject_id=subject.pk)
    print(f"CPU per request in this process, {args.requests} requests each ({removed} posts removed):")
    for name in VARIANTS:
        ratio = figures["floor"] / figures[name]
        print(f"  {name:40s} {figures[name]:6.3f} ms   floor / this = {ratio:.2f}")
    print(
        f"  (each line includes the CPU of this process's PostgreSQL backend: {database_ms['floor']:.3f} ms "
        f"for the floor, {database_ms['post']:.3f} ms for a post)"
    )
    print(
        f"The worker's share of each post (its second check, notifications and webhooks events, drained as the "
        f"beat tasks do): {worker_python:.3f} ms in Python, {worker_database:.3f} ms in PostgreSQL"
    )


if __name__ == "__main__":
    main()
