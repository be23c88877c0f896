"""The statements a whole test run executed, for ``check_citus_schema --run`` (docs/citus.md).

With ``CITUS_RUN_LOG`` naming a file, every statement the test process runs on the default
database is kept once, with the first test that ran it, and the set is written to the file as
JSON lines when the run ends. ``scripts/test-citus`` sets it for the suite on the cluster: each
statement in the file then ran on Citus in a test that passed (a statement Citus refused fails
its test), and the check holds each to the plan, counting those that cross shards.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

_LOG = os.environ.get("CITUS_RUN_LOG")
_TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT", "ROLLBACK")

_first_run_by: dict[str, str] = {}


@contextmanager
def statements_kept(test: str) -> Iterator[None]:
    """Within the block, each statement run on the default database is kept with ``test``."""
    if not _LOG:
        yield
        return

    def keep(execute, sql, params, many, context):
        # A statement may be psycopg's Composed (the text is the driver's to make): not kept.
        if (
            isinstance(sql, str)
            and sql not in _first_run_by
            and not sql.lstrip().upper().startswith(_TRANSACTION_CONTROL)
        ):
            _first_run_by[sql] = test
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        yield


def write_run_log() -> None:
    """Write the statements kept (``CITUS_RUN_LOG``), one JSON line each."""
    if not _LOG:
        return
    with open(_LOG, "w", encoding="utf-8") as out:
        for sql, test in _first_run_by.items():
            out.write(json.dumps({"sql": sql, "test": test}) + "\n")
