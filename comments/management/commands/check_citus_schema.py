"""Hold the database's schema, and the hot queries' SQL captured from the test suite, to the
Citus plan (``infra.citus``, docs/citus.md). Exits non-zero on a violation."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from infra import citus


class Command(BaseCommand):
    help = "Check the PostgreSQL schema and captured hot queries against the Citus plan."

    def add_arguments(self, parser):
        parser.add_argument("--queries", help="JSON lines of captured statements (tests/citus/conftest.py)")

    def handle(self, *args, queries=None, **options):
        if connection.vendor != "postgresql":
            raise CommandError("the Citus plan is checked on PostgreSQL (set DATABASE_URL)")
        with connection.cursor() as cursor:
            violations, gaps = citus.schema_violations(cursor)
        checked, by_id = 0, 0
        if queries:
            with open(queries, encoding="utf-8") as lines:
                for line in lines:
                    captured = json.loads(line)
                    checked += 1
                    problems = citus.query_violations(captured["sql"])
                    if (
                        problems
                        and captured.get("comment_by_id")
                        and not citus.query_violations(captured["sql"], found_by_id=frozenset({"comment_index"}))
                    ):
                        by_id += 1
                        continue
                    for problem in problems:
                        violations.append(f'hot query "{captured["query"]}": {problem}\n    {captured["sql"]}')
            if not checked:
                violations.append(f"{queries}: no captured statement (did the hot-query tests run?)")
        if by_id:
            gaps.append(
                f"{by_id} captured read(s) found a comment by its id alone (the API names comments by id): "
                "every shard is asked"
            )
        for gap in gaps:
            self.stdout.write(f"known gap: {gap}")
        if violations:
            raise CommandError("Citus plan violated:\n" + "\n".join(f"- {v}" for v in violations))
        self.stdout.write(f"Citus plan holds: schema, and {checked} captured hot statement(s)")
