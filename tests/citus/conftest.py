"""``hot_queries``: the SQL a block of a test runs, held to the Citus plan twice.

- On plain PostgreSQL, ``scripts/check-citus-schema`` runs these tests with ``CITUS_QUERY_LOG``
  naming a file; every statement run inside a ``with hot_queries(name):`` block is appended to
  it as a JSON line (``{"query": name, "sql": ...}``), and the script holds each against the
  plan (``infra.citus.query_violations``), reading the SQL.
- On a Citus coordinator (``scripts/test-citus``), Citus itself is asked: each statement of the
  block, with its parameters, is explained there, and must go to one shard group (a single
  task) or stay on the coordinator. A parser can miss a join that Citus cannot route; the
  planner cannot.

The blocks cover the hot queries only: what a test does to set itself up is outside them."""

from __future__ import annotations

import contextlib
import json
import os

import psycopg
import pytest
from django.db import connection

from ..citus_cluster import Cluster, cluster_or_skip, on_citus

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
        bound = []

        def record(execute, sql, params, many, context):
            if not sql.lstrip().upper().startswith(_TRANSACTION_CONTROL):
                statements.append(sql)
                if not many:
                    bound.append((sql, params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            yield statements
        if on_citus():
            spread = [
                (sql, tasks)
                for sql, params in bound
                if (tasks := citus_tasks(sql, params)) > 1 and not (comment_by_id and _is_read(sql))
            ]
            assert not spread, f"{name}: statements Citus sends to more than one shard group: {spread}"
        if log:
            with open(log, "a", encoding="utf-8") as out:
                for sql in statements:
                    out.write(json.dumps({"query": name, "sql": sql, "comment_by_id": comment_by_id}) + "\n")

    return capture


def _is_read(sql: str) -> bool:
    return sql.lstrip().upper().startswith("SELECT")


_PLANNED = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def citus_tasks(sql: str, params) -> int:
    """How many tasks (shard groups) the coordinator's plan of ``sql`` sends out at most, in
    any of its steps; 0 for a statement that runs on the coordinator alone, or is no query.
    Explained, not run, on a connection of its own (the test's transaction has run on the
    coordinator's copies of the reference tables, and Citus will not mix the two); the
    parameters are inlined by the client, as EXPLAIN takes none bound."""
    if not sql.lstrip().upper().startswith(_PLANNED):
        return 0
    params_of_apart = {**connection.get_connection_params(), "cursor_factory": psycopg.ClientCursor}
    with psycopg.connect(**params_of_apart) as apart:
        document = apart.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()[0]
    plan = document if isinstance(document, list) else json.loads(document)
    return max(_task_counts(plan), default=0)


def _task_counts(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Task Count":
                yield int(value)
            else:
                yield from _task_counts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _task_counts(item)


@pytest.fixture
def cluster(transactional_db) -> Cluster:
    """``scripts/citus-cluster``'s cluster under the test database, with its two workers (the
    test is skipped elsewhere). A third worker that an earlier rebalancing run failed to remove
    goes before the test's service starts: its sessions would keep connections to it."""
    cluster = cluster_or_skip()
    cluster.third_worker_removed()
    return cluster
