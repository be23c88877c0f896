"""The replica tests need a real streaming replica as ``replica1`` (scripts/test-replica starts
one and names it in DATABASE_REPLICA_URLS); without one they fail rather than pass on a mirror.
The suite's own runs leave this folder out (tests/conftest.py) and test the router's rules on a
mirror (tests/comments/test_replicas.py)."""

import pytest

from infra import replicas
from tests import pg_replica


@pytest.fixture(autouse=True)
def streaming_replica(settings, django_db_blocker):
    with django_db_blocker.unblock():
        if not pg_replica.is_streaming_replica():
            pytest.fail("replica1 is not a streaming replica: run these tests with scripts/test-replica")
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    replicas.reset()
    yield
    with django_db_blocker.unblock():
        pg_replica.resume()
    replicas.reset()
