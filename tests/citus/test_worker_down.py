"""A Citus worker down (issue 34): the subjects whose shards are on the stopped worker answer as
the whole service does with PostgreSQL down (tests/comments/test_availability.py): their cached
pages are served, the previous version marked ``X-Comments-Stale: 1``, and what needs the
worker is ``503 unavailable`` in the API's error shape; the subjects on the other worker are read
and written as usual. Once the worker is back nothing is lost: a post taken before is there, and
a post refused with a 503 left nothing behind (sent again with its ``Idempotency-Key``, it is
stored, once).

The service runs under gunicorn on the test database, the suite's Citus coordinator
(``scripts/citus-cluster``), whose second worker the test stops and starts again."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from comments.models import Comment, CommentContent, IdempotentRequest, Subject
from comments.services import token_issue

from ..api.conftest import API
from ..citus_cluster import body_of, log_tail, service_env, shard_port
from ..factories import SiteFactory, SubjectFactory, UserFactory
from ..servers import Service, wait_until
from ..workers import broker_url  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MAX_TRIES = 64  # sites or subjects made to find one whose shard is on a given worker
UNAVAILABLE = {
    "error": {"code": "unavailable", "message": "The service is unavailable for a moment; please try again."}
}


@pytest.fixture
def service(cluster, redis_url, broker_url, tmp_path):
    # Every read goes to the shared cache, none to a process's hot copies (a second's life),
    # as in the PostgreSQL-down test.
    log = tmp_path / "gunicorn.log"
    server = Service(service_env(redis_url, broker_url, log, COMMENTS_HOT_PAGE_SECONDS="0"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        print(f"----- the service's log -----\n{log_tail(log)}")


def _placed(cluster):
    """A site whose subjects' keys are on worker 1 (so a page finds its subject by key with
    worker 2 down), and one subject of it on each worker: ``(site, {worker: subject})``."""
    with connection.cursor() as cursor:
        for _ in range(MAX_TRIES):
            site = SiteFactory()
            if shard_port(cursor, "comment_subject_key", site.pk) == cluster.worker_port(1):
                break
        else:
            pytest.fail(f"no site's key shard on worker 1 in {MAX_TRIES} sites")
        subjects: dict[int, Subject] = {}
        for _ in range(MAX_TRIES):
            subject = SubjectFactory(site=site)
            port = shard_port(cursor, "comment_subject", subject.pk)
            worker = port - cluster.port
            subjects.setdefault(worker, subject)
            if set(subjects) == {1, 2}:
                return site, subjects
    pytest.fail(f"no subject on each worker in {MAX_TRIES} subjects: {subjects}")


def test_with_a_worker_stopped_its_subjects_answer_503_or_cached_pages_and_the_others_go_on(cluster, service):
    site, subjects = _placed(cluster)
    up, down = subjects[1], subjects[2]
    token = token_issue(user=UserFactory())[0]

    def comments_path(subject) -> str:
        return f"{API}/subjects/{subject.pk}/comments?mode=flat"

    def embed_path(subject) -> str:
        return f"/embed/?site={site.key}&key={subject.key}"

    def post(subject, body: str, headers: dict | None = None):
        return service.request("POST", comments_path(subject), {"body": body}, token, headers)

    def posted(subject, body: str) -> int:
        status, _, answer = post(subject, body)
        assert status == 201, (subject.pk, status, answer[:300])
        return json.loads(answer)["id"]

    def page(subject):
        status, headers, answer = service.request("GET", comments_path(subject))
        assert status == 200, (subject.pk, status, answer[:300])
        return [item["id"] for item in json.loads(answer)["items"]], headers.get("X-Comments-Stale")

    # Each subject has two posts, its pages read (and cached) with both.
    ids = {}
    for name, subject in (("up", up), ("down", down)):
        first = posted(subject, f"the first on {name}")
        assert page(subject) == ([first], None)
        second = posted(subject, f"the second on {name}")
        assert page(subject) == ([first, second], None)
        status, headers, html = service.request("GET", embed_path(subject))
        assert status == 200 and f"the second on {name}".encode() in html, (status, html[:300])
        ids[name] = [first, second]
    # A third post on the subject of worker 2 makes its cached pages out of date just before
    # the worker goes: taken, it must be there when the worker is back.
    third = posted(down, "the third on down")
    refused_key = {"Idempotency-Key": "refused-while-worker-2-is-down"}

    cluster.script("stop-worker", "2")
    try:
        # The subject on the stopped worker: its cached pages, marked stale.
        assert page(down) == (ids["down"], "1")
        status, headers, html = service.request("GET", embed_path(down))
        assert status == 200, (status, html[:300])
        assert b"the second on down" in html and b"the third on down" not in html
        assert headers.get("X-Comments-Stale") == "1"
        # What needs the worker: 503 in the error shape, with when to come back.
        answer = post(down, "refused", refused_key)
        assert answer[0] == 503, answer
        assert body_of(answer) == UNAVAILABLE
        assert answer[1].get("Retry-After") == "5"
        answer = service.request("GET", f"{API}/subjects/{down.pk}")
        assert answer[0] == 503 and body_of(answer) == UNAVAILABLE, answer

        # The subject on worker 1: read and written as usual, nothing stale.
        while_down = posted(up, "posted while worker 2 is down")
        assert page(up) == ([*ids["up"], while_down], None)
        status, headers, html = service.request("GET", embed_path(up))
        assert status == 200 and b"posted while worker 2 is down" in html, (status, html[:300])
        assert "X-Comments-Stale" not in headers
        answer = service.request("GET", f"{API}/subjects/{up.pk}")
        assert answer[0] == 200 and body_of(answer)["comment_count"] == 3, answer
        ids["up"].append(while_down)
    finally:
        cluster.script("start-worker", "2")
        # This process's session keeps its connections to the workers; the one to worker 2
        # died with it.
        connection.close()

    # The worker back: the page is rebuilt with the post taken before it went, and the refused
    # post left nothing (no row, no kept answer to replay).
    def back() -> bool:
        status, headers, _ = service.request("GET", comments_path(down))
        return status == 200 and "X-Comments-Stale" not in headers

    wait_until(back, "the subject on worker 2 read afresh once the worker was back")
    assert page(down) == ([*ids["down"], third], None)
    assert not CommentContent.objects.filter(subject_id=down.pk, body="refused").exists()
    assert not IdempotentRequest.objects.filter(key=refused_key["Idempotency-Key"]).exists()
    # Sent again as a client would after a 503 (at most while the service still finds the worker
    # gone): stored now, once, and not a replay of the refusal.
    answers = []

    def sent_again() -> bool:
        answers.append(post(down, "refused", refused_key))
        return answers[-1][0] != 503

    wait_until(sent_again, "the refused post taken once the worker was back", seconds=30)
    status, headers, answer = answers[-1]
    assert status == 201 and "Idempotent-Replayed" not in headers, (status, answer[:300])
    ids["down"] += [third, json.loads(answer)["id"]]

    for name, subject in (("up", up), ("down", down)):
        rows = list(Comment.objects.filter(subject_id=subject.pk).order_by("id").values_list("id", flat=True))
        assert rows == sorted(ids[name]), name
        assert Subject.objects.get(pk=subject.pk).comment_count == len(rows), name
        assert page(subject) == (ids[name], None)
