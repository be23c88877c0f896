"""What a post costs the server's CPU, piece by piece, and the least an asynchronous write could
bring it to: a profiling tool behind a claim in ``docs/benchmarks.md``, not a benchmark.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 LIKES_REDIS_URL=redis://127.0.0.1:6379/9 \\
    .venv/bin/python -m bench.post_cost

Requests go straight to Django's WSGI handler in this process, one at a time (no HTTP server,
no threads), with ``bench.http``'s settings and dataset (run ``bench.http`` once first). Each
variant's figure is the process CPU time per request over ``--requests`` requests:

- *floor*: the empty authenticated DRF view ``bench.http`` compares posts with;
- *post*: ``POST /api/v1/subjects/<the bench subject>/comments``, as served;
- *post, nothing written*: the same request with the insert and everything run after the commit
  (page versions, the empty like state, the queued second check) replaced by nothing;
- *post, nothing written, subject known*: also without the subject's lookup.

The last two are what no write design can go below: an asynchronous write still has to
authenticate, validate, run the moderation checks and render the Markdown before it answers
``201`` with the comment's status and HTML. The posts are removed and the counters reconciled
at the end.
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
            "REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http",
            "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr, "HTTP_ACCEPT": "application/json", "HTTP_AUTHORIZATION": f"Bearer {token}",
        }
        statuses = []
        response = app(environ, lambda status, headers, *exc: statuses.append(status))
        b"".join(response)
        response.close()
        if not statuses[0].startswith(("200", "201")):
            sys.exit(f"{path}: {statuses[0]}")

    def cpu_ms_per_request(path: str) -> float:
        for _ in range(50):  # warm-up: connections, prepared statements, process caches
            request(path)
        started = time.process_time()
        for _ in range(args.requests):
            request(path)
        return (time.process_time() - started) / args.requests * 1000

    post_path = f"/api/v1/subjects/{subject.pk}/comments"
    nothing_written = (
        mock.patch.object(services, "_store_new_comment", lambda comment, content, counted: 1),
        mock.patch.object(hooks.comment_posted, "send", lambda *a, **k: []),
    )
    known = queries.subject_for_viewer(subject.pk, poster)
    subject_known = mock.patch.object(queries, "subject_for_viewer", lambda subject_id, user: known)
    figures = {}
    try:
        figures["floor"] = cpu_ms_per_request(AUTH_EMPTY_PATH)
        figures["post"] = cpu_ms_per_request(post_path)
        with nothing_written[0], nothing_written[1]:
            figures["post, nothing written"] = cpu_ms_per_request(post_path)
            with subject_known:
                figures["post, nothing written, subject known"] = cpu_ms_per_request(post_path)
    finally:
        removed = purge_comments("subject_id = %s AND author_id = %s", [subject.pk, poster.pk])
        services.subject_reconcile_counters(subject_id=subject.pk)
    print(f"CPU per request in this process, {args.requests} requests each ({removed} posts removed):")
    for name in VARIANTS:
        ratio = figures["floor"] / figures[name]
        print(f"  {name:40s} {figures[name]:6.3f} ms   floor / this = {ratio:.2f}")


if __name__ == "__main__":
    main()
