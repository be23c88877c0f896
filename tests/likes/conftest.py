"""Fixtures of the likes suite: ``like_store`` runs a test once with the like state in a real
Redis (``redis_url``, from the suite's conftest) and once with no Redis at all."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["redis", "database"])
def like_store(request):
    """Run the test with like state in Redis, then with the database alone."""
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    else:
        request.getfixturevalue("no_redis")
    return request.param
