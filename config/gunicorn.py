"""gunicorn settings for production: ``gunicorn -c config/gunicorn.py config.wsgi``.

Command-line options override these (``-w 8``, ``-b 0.0.0.0:8000``). ``GUNICORN_WORKERS`` and
``GUNICORN_THREADS`` set the pool from the environment, ``GUNICORN_BIND`` the address and
``GUNICORN_CONTROL_SOCKET`` a control socket (none by default).
"""

import os

from config.env import env_int, env_str

bind = env_str("GUNICORN_BIND", "127.0.0.1:8000")
workers = env_int("GUNICORN_WORKERS", os.cpu_count() or 1)

# Threads: a request spends much of its time waiting on PostgreSQL and Redis, and a thread
# waiting releases the GIL, so a few threads per process keep a core busy.
worker_class = "gthread"
threads = env_int("GUNICORN_THREADS", 4)

# One listening socket per worker, and the kernel spreads new connections over them. With a
# shared socket, whichever worker wakes first accepts every connection of a burst: measured
# on 2 cores with 8 keep-alive connections, half the runs had one worker serving them all
# and half the throughput (bench/likes.py, measurement 2).
reuse_port = True

# The longest request line gunicorn reads: its maximum (its default, 4,094 bytes, answered
# longer URLs with an HTML 414 page of its own, even under /api/). The service's own limit on a
# URL is lower (comments.middleware.MAX_URL_BYTES, 8,000 bytes), so a URL between the two
# reaches Django, which answers it in the API's error shape.
limit_request_line = 8190

# gunicorn's control socket (gunicornc: worker status, scaling, reloads) is off: nothing here
# uses it (a reload is a HUP), and its default path is one per user, not per instance
# ($XDG_RUNTIME_DIR/gunicorn.ctl, else ~/.gunicorn/gunicorn.ctl), so a second instance on the
# machine (another host's port, a test's server) took it over and the first one to stop removed
# it. GUNICORN_CONTROL_SOCKET names a path of this instance's own to have one.
_control_socket = env_str("GUNICORN_CONTROL_SOCKET", "")
control_socket_disable = not _control_socket
if _control_socket:
    control_socket = _control_socket

# Comment widgets ask again within seconds (list, then likes, then a post).
keepalive = 5
timeout = 30
graceful_timeout = 10


def post_worker_init(worker):
    """Load what Django and DRF would load on the first requests (``config.warmup``: the URLconf
    and views, DRF's classes, the readers' templates, the caches' connections), so that no reader
    waits for it after a deploy or restart.

    Then move everything the worker holds (Django, DRF, the URL resolver, compiled templates:
    hundreds of thousands of objects) out of the garbage collector's reach. A full collection then
    walks only what requests made since, instead of pausing a request for tens of milliseconds now
    and then (measured on the like endpoint's p99: ``docs/benchmarks.md``, likes, measurement 2)."""
    import gc

    from config.warmup import warm_up

    warm_up()
    gc.collect()
    gc.freeze()
