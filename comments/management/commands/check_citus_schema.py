"""Hold the database's schema, and the hot queries' SQL captured from the test suite, to the
Citus plan (``infra.citus``, docs/citus.md). Exits non-zero on a violation.

``--run``: the statements a whole test run executed on a Citus coordinator
(tests/citus_statements.py). Each ran on the cluster in a test that passed; the check counts
those the plan routes to one shard group (or the coordinator) and those that cross shards, and
lists the latter with the test that ran each (``--verbosity 2``)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from infra import citus


class Command(BaseCommand):
    help = "Check the PostgreSQL schema, captured hot queries and a run's statements against the Citus plan."

    def add_arguments(self, parser):
        parser.add_argument("--queries", help="JSON lines of captured statements (tests/citus/conftest.py)")
        parser.add_argument("--run", help="JSON lines of a whole run's statements on Citus (tests/citus_statements.py)")

    def handle(self, *args, queries=None, run=None, **options):
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
        if run:
            crossing = self._run(run, violations, verbose=options["verbosity"] > 1)
            if crossing:
                gaps.append(
                    f"{crossing} statement(s) of the run on the cluster cross shards; each ran there in a test "
                    "that passed (--verbosity 2 lists them with the test)"
                )
        if by_id:
            gaps.append(
                f"{by_id} captured read(s) found a comment by its id alone (the API names comments by id): "
                "every shard is asked"
            )
        for gap in gaps:
            self.stdout.write(f"known gap: {gap}")
        if violations:
            raise CommandError("Citus plan violated:\n" + "\n".join(f"- {v}" for v in violations))
        held = [f"{checked} captured hot statement(s)"] if queries else []
        self.stdout.write(f"Citus plan holds: {', '.join(['schema', *held])}")

    def _run(self, path: str, violations: list[str], *, verbose: bool) -> int:
        """Hold a run's statements to the plan; how many cross shards."""
        routed, crossing = 0, []
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                ran = json.loads(line)
                problems = citus.query_violations(ran["sql"])
                if problems:
                    crossing.append((ran, problems))
                else:
                    routed += 1
        if not routed and not crossing:
            violations.append(f"{path}: no statement (did the run on Citus write it?)")
        self.stdout.write(
            f"the run on Citus: {routed + len(crossing)} distinct statement(s), {routed} to one shard group "
            f"or the coordinator, {len(crossing)} across shards"
        )
        if verbose:
            for ran, problems in crossing:
                self.stdout.write(f"- {ran['test']}: {'; '.join(problems)}\n    {ran['sql'][:300]}")
        return len(crossing)
