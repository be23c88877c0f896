"""Settings of the HTTP server that ``python -m bench.http`` starts (and of its Celery worker):
the application's own settings (``config.settings``, from the same environment variables) with
a URLconf that adds the empty views measured as floors (``bench/http_urls.py``), and one more
middleware, first, that reports each request's SQL statements and cache hits in response
headers (``bench/http_middleware.py``). The floors pay for that middleware as the measured
views do."""

from config.settings import *  # noqa: F403
from config.settings import MIDDLEWARE

ROOT_URLCONF = "bench.http_urls"
MIDDLEWARE = ["bench.http_middleware.BenchCountersMiddleware", *MIDDLEWARE]
