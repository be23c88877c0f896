"""``hot_queries``: the SQL a block of a test runs, kept for the Citus check.

``scripts/check-citus-schema`` runs these tests with ``CITUS_QUERY_LOG`` naming a file; every
statement run inside a ``with hot_queries(name):`` block is appended to it as a JSON line
(``{"query": name, "sql": ...}``), and the script holds each against the plan
(``infra.citus.query_violations``). The blocks cover the hot queries only: what a test
does to set itself up is outside them."""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from django.db import connection

from ..citus_cluster import Cluster, cluster_or_skip

# The test's own transaction and the services' savepoints name no table.
_TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT")


@pytest.fixture
def hot_queries():
    log = os.environ.get("CITUS_QUERY_LOG") if connection.vendor == "postgresql" else None

    @contextlib.contextmanager
    def capture(name: str, *, comment_by_id: bool = False):
        """``comment_by_id``: the operation names a comment by its id alone (``/comments/<id>``),
        so its reads may find it by id; its writes must still name the subject."""
        statements = []

        def record(execute, sql, params, many, context):
            if not sql.lstrip().upper().startswith(_TRANSACTION_CONTROL):
                statements.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            yield statements
        if log:
            with open(log, "a", encoding="utf-8") as out:
                for sql in statements:
                    out.write(json.dumps({"query": name, "sql": sql, "comment_by_id": comment_by_id}) + "\n")

    return capture


@pytest.fixture
def cluster(transactional_db) -> Cluster:
    """``scripts/citus-cluster``'s cluster under the test database, with its two workers (the
    test is skipped elsewhere). A third worker that an earlier rebalancing run failed to remove
    goes before the test's service starts: its sessions would keep connections to it."""
    cluster = cluster_or_skip()
    cluster.third_worker_removed()
    return cluster
