"""Settings of the HTTP server that ``python -m bench.likes`` starts for its throughput runs: the
application's own settings (``config.settings``, from the same environment variables) with a
URLconf that adds one empty view next to the real API (``bench/likes_urls.py``)."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.likes_urls"
