"""One round trip of several Redis commands, for the few calls made on nearly every request.

``round_trip(r, commands)`` is what ``r.pipeline(transaction=False)`` does (one write of every
command, then every reply, in order) without the ``Pipeline`` object: its command stack,
response callbacks, retry wrapper and metrics hooks were a measurable part of the like
endpoint's CPU (``docs/benchmarks.md``, likes).
Replies come back as Redis sent them (no response callbacks), and an error reply comes back as
its exception, not raised, like ``execute(raise_on_error=False)``. A failure of the connection
itself (``ConnectionError``, ``TimeoutError``) is raised as redis-py raises it; the connection
is dropped, never returned to the pool with a reply still unread on it.
"""

from __future__ import annotations

from typing import Sequence

import redis


def round_trip(r: redis.Redis, commands: Sequence[tuple]) -> list:
    pool = r.connection_pool
    conn = pool.get_connection()
    try:
        conn.send_packed_command(conn.pack_commands(commands))
        replies = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except redis.exceptions.ResponseError as error:
                replies.append(error)
        return replies
    except BaseException:
        conn.disconnect()  # redis-py drops it on a socket error; this covers anything else
        raise
    finally:
        pool.release(conn)
