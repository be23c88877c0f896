"""The service under gunicorn (``config/gunicorn.py``) for the tests that need it as a real HTTP
server, started and stopped by the test on a free port of loopback."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAIT_SECONDS = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds:.0f} s"
        time.sleep(0.1)


class Service:
    """The service under gunicorn on the environment ``env`` (its database, Redis and broker)."""

    def __init__(self, env: dict, *, workers: int = 1):
        self.port = free_port()
        self.env = env
        self.workers = workers
        self.process: subprocess.Popen | None = None

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "-c",
                "config/gunicorn.py",
                "config.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(self.workers),
                "--log-level",
                "warning",
            ],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until(lambda: self.request("GET", "/healthz")[0] == 200, "the service did not answer /healthz")

    def request(
        self, method: str, path: str, body: dict | None = None, token: str | None = None, headers: dict | None = None
    ):
        """``(status, headers, body bytes)``; status 0 when the server could not be reached."""
        headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        except OSError:
            return 0, {}, b""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
