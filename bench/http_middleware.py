"""Per-request counts for ``bench.http``, in response headers that its wrk script sums:

- ``X-Bench-Queries``: SQL statements executed on this thread's database connection while the
  request was handled (``connection.execute_wrapper``);
- ``X-Bench-Cache-Hits`` / ``X-Bench-Cache-Misses``: what the read caches counted on this
  thread meanwhile (``infra.cachestats``, read before and after).

First in ``MIDDLEWARE`` (``bench/http_settings.py``), so everything the application does for a
request is inside the count."""

from __future__ import annotations

from django.db import connection

from infra.cachestats import counts


class BenchCountersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        statements = 0

        def count(execute, sql, params, many, context):
            nonlocal statements
            statements += 1
            return execute(sql, params, many, context)

        hits, misses = counts.hits, counts.misses
        with connection.execute_wrapper(count):
            response = self.get_response(request)
        response["X-Bench-Queries"] = str(statements)
        response["X-Bench-Cache-Hits"] = str(counts.hits - hits)
        response["X-Bench-Cache-Misses"] = str(counts.misses - misses)
        return response
