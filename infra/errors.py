"""Failures of the parts the service stands on, named once for every layer above."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

# What the database driver raises when the database is down or unreachable (or a transaction
# must be retried): the service's failure, not the request's, and one that passes. Readers
# get a cached page if there is one, everyone else a 503.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
