"""What the benchmarks that load a real HTTP server share (``bench.likes``'s throughput runs,
``bench.http``): gunicorn started with the production config file (``config/gunicorn.py``) and
a bench settings module, ``wrk`` run with a Lua script, and what /proc says about the
processes serving (CPU time, memory)."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import BASE_DIR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A load generator's few users post and like far beyond any per-user limit, and far beyond
# the rate the second moderation check calls a burst (every post would open a review task):
# they stand in for many people.
LOAD_ENV = {"RATE_LIMITS": "off", "MODERATION_BURST_LIMIT": "1000000"}
LOAD_ENV_TEXT = " ".join(f"{name}={value}" for name, value in LOAD_ENV.items())


def server_env(settings_module: str) -> dict[str, str]:
    """The environment of the processes a benchmark starts: this one's (database, Redis,
    broker), its bench settings module, and ``LOAD_ENV``."""
    return dict(os.environ, DJANGO_SETTINGS_MODULE=settings_module, **LOAD_ENV)


class Server:
    """gunicorn on 127.0.0.1 with the production settings (config/gunicorn.py: gthread, one
    socket per worker) and this run's pool, port and settings module. ``worker_class="sync"``
    runs plain sync workers instead (one thread each: gunicorn would switch a sync worker with
    more threads to gthread)."""

    def __init__(self, port: int, *, settings_module: str, workers: int, threads: int, worker_class: str = "gthread"):
        self.port = port
        self.settings_module = settings_module
        self.worker_class = worker_class
        if worker_class == "sync":
            threads = 1
        self.log_path = Path(tempfile.mkstemp(prefix="bench-gunicorn-", suffix=".log")[1])
        pool = ["--workers", str(workers), "--threads", str(threads)]
        if worker_class != "gthread":
            pool += ["--worker-class", worker_class]
        self.args = [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            str(BASE_DIR / "config" / "gunicorn.py"),
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            *pool,
            "--chdir",
            str(BASE_DIR),
            "--pythonpath",
            str(BASE_DIR),
            "--log-level",
            "warning",
            "--graceful-timeout",
            "5",
        ]
        self.description = f"`gunicorn -c config/gunicorn.py config.wsgi:application -w {workers}" + (
            f" --threads {threads}` (gthread, `reuse_port`)"
            if worker_class == "gthread"
            else f" -k {worker_class} --threads 1` ({worker_class}, `reuse_port`)"
        )
        self.proc: subprocess.Popen | None = None
        self.pid = 0

    @property
    def command_line(self) -> str:
        """The command as run, relative to the checkout, with the environment it adds."""
        args = [".venv/bin/gunicorn"] + [
            a.replace(str(BASE_DIR) + "/", "").replace(str(BASE_DIR), ".") for a in self.args[1:]
        ]
        return f"DJANGO_SETTINGS_MODULE={self.settings_module} {LOAD_ENV_TEXT} {shlex.join(args)}"

    def start(self, method: str, path: str, headers: dict | None = None) -> None:
        """Start and wait until ``method path`` answers 200 (the probe: a request that warms
        nothing the benchmark measures); stopped again if it does not."""
        self.log_file = open(self.log_path, "w")  # noqa: SIM115 - the child process's output, closed by hand below
        self.proc = subprocess.Popen(
            self.args,
            env=server_env(self.settings_module),
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            cwd=BASE_DIR,
        )
        self.pid = self.proc.pid
        try:
            self._wait_until_answering(method, path, headers)
        except BaseException:
            self.stop()
            raise

    def _wait_until_answering(self, method: str, path: str, headers: dict | None) -> None:
        import http.client

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log_tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request(method, path, headers=headers or {})
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return
                raise RuntimeError(f"{method} {path} answered {status}: {self.log_tail()}")
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not answer within 30 s")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log_file.close()

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text()[-2000:]
        except OSError:
            return ""

    def workers(self) -> list[int]:
        return [pid for pid, (_, ppid, _) in _processes().items() if ppid == self.pid]

    def worker_memory(self) -> dict[int, tuple[int, int]]:
        """``{worker pid: (VmHWM, VmRSS)}`` in KiB: each worker's peak and current resident size."""
        out = {}
        for pid in self.workers():
            fields = {}
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    name, _, value = line.partition(":")
                    if name in ("VmHWM", "VmRSS"):
                        fields[name] = int(value.split()[0])
            except OSError:
                continue
            out[pid] = (fields.get("VmHWM", 0), fields.get("VmRSS", 0))
        return out


def _processes() -> dict[int, tuple[str, int, float]]:
    """Every process: ``{pid: (command name, parent pid, CPU seconds used so far)}``, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        procs[int(entry)] = (comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return procs


def proc_cpu(server_pid: int) -> dict:
    """CPU seconds used so far by each process of the server (gunicorn master and workers),
    PostgreSQL and Redis, from /proc: ``{(group, pid): seconds}``."""
    out = {}
    for pid, (comm, ppid, cpu) in _processes().items():
        if pid == server_pid or ppid == server_pid:
            out[("gunicorn", pid)] = cpu
        elif comm.startswith("postgres"):
            out[("postgres", pid)] = cpu
        elif comm.startswith("redis-server"):
            out[("redis", pid)] = cpu
    return out


def cpu_used(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds per group between two ``proc_cpu`` snapshots (processes that started meanwhile
    count in full; those that ended are lost)."""
    used = {"gunicorn": 0.0, "postgres": 0.0, "redis": 0.0}
    for (group, pid), seconds in after.items():
        used[group] += seconds - before.get((group, pid), 0.0)
    return used


def run_wrk_script(script: str, url: str, *, seconds: float, connections: int, threads: int, workdir: Path) -> dict:
    """Run ``wrk`` with the Lua ``script`` against ``url`` for ``seconds``; the script's ``done()``
    prints one line ``WRK {json}``, returned parsed."""
    path = workdir / "load.lua"
    path.write_text(script)
    cmd = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "5s",
        "-s",
        str(path),
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    match = re.search(r"^WRK (\{.*\})$", done.stdout, re.M)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"wrk failed: {done.stdout[-1000:]} {done.stderr[-1000:]}")
    return json.loads(match.group(1))
