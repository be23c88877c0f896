"""The production server settings (``config/gunicorn.py``) start a server that answers, keeps
connections alive, and gives every worker a listening socket of its own (``reuse_port``), so
the kernel spreads connections over the workers instead of the first one awake taking them all.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..servers import free_port

REPO = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 30.0


def _listening_sockets(port: int) -> int:
    """How many sockets listen on 127.0.0.1:``port`` (state 0A in /proc/net/tcp)."""
    wanted = f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as table:
        return sum(1 for line in table.readlines()[1:] if line.split()[1] == wanted and line.split()[3] == "0A")


def _get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()


def test_the_production_settings_serve_with_a_socket_per_worker_and_keep_alive():
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            "config/gunicorn.py",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while _listening_sockets(port) < 2:
            assert server.poll() is None, server.stdout.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the workers did not listen within 30 s"
            time.sleep(0.1)
        assert _listening_sockets(port) == 2  # one per worker, none shared through the master

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        status, body = _get(conn, "/api/v1/schema/")
        assert status == 200 and b"openapi" in body
        local = conn.sock.getsockname()
        status, _ = _get(conn, "/api/v1/me")  # anonymous: the contract's 401, same connection
        assert status == 401
        assert conn.sock is not None and conn.sock.getsockname() == local  # kept alive
        conn.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(5)
