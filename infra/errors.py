"""Failures of the parts the service stands on, named once for every layer above."""

from __future__ import annotations

from django.db import InterfaceError, InternalError, OperationalError

# What the database driver raises when the database is down or unreachable (or a transaction
# must be retried): the service's failure, not the request's, and one that passes. Readers
# get a cached page if there is one, everyone else a 503.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)

# On Citus, a worker lost under a session that had a connection to it is raised by the
# coordinator without an error code (SQLSTATE XX000, InternalError), not as a connection
# failure: the worker's subjects are unavailable, as with PostgreSQL down.
_CITUS_WORKER_LOST = ("failure on connection marked as essential", "connection to the remote node")


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database (or a Citus worker) cannot be reached now."""
    if isinstance(error, DATABASE_UNAVAILABLE):
        return True
    return isinstance(error, InternalError) and any(sign in str(error) for sign in _CITUS_WORKER_LOST)
