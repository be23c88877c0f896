"""What posting costs in SQL, so that a change that adds a round trip to every post is seen.
(The benchmark times posting; the counts here do not depend on the machine.)"""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from ..factories import CommentFactory
from .conftest import API

# Token, subject with the viewer's role (the moderation checks read per-process snapshots),
# then the transaction: the subject row (lock, counters and floor in one statement), the index
# row, the content row.
# The answer is built from what was written: nothing is read back.
TOP_LEVEL_QUERIES = 5
# A reply also reads its target, takes the thread's next floor and moves its ancestors' counts.
REPLY_QUERIES = 8


def _statements(context) -> list[str]:
    # Savepoints are the test's transaction wrapping the service's; production has none.
    return [q["sql"] for q in context.captured_queries if "SAVEPOINT" not in q["sql"].upper()]


def test_posting_a_top_level_comment_and_a_reply_take_a_fixed_number_of_queries(client_for, user, subject):
    client = client_for(user)
    target = CommentFactory(subject=subject, reply_to=CommentFactory(subject=subject))
    client.post(f"{API}/subjects/{subject.id}/comments", {"body": "warm up"}, format="json")
    with CaptureQueriesContext(connection) as top:
        assert client.post(f"{API}/subjects/{subject.id}/comments", {"body": "Hello"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as reply:
        response = client.post(
            f"{API}/subjects/{subject.id}/comments", {"body": "Hi", "reply_to_id": target.id}, format="json"
        )
        assert response.status_code == 201
    assert len(_statements(top)) <= TOP_LEVEL_QUERIES, _statements(top)
    assert len(_statements(reply)) <= REPLY_QUERIES, _statements(reply)
    body = response.json()
    assert (body["body"], body["like_count"], body["liked"], body["reply_to_id"]) == ("Hi", 0, False, target.id)
    assert body["html"].strip() == "<p>Hi</p>"
