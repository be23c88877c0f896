"""A Redis Cluster on loopback for the tests: three masters and a replica of each, started in a
folder of their own, every node a ``redis-server`` in cluster mode, joined by
``redis-cli --cluster create``.

    python -m tests.redis_cluster -- <command ...>

starts one, runs the command with ``REDIS_URL`` and ``TEST_REDIS_URL`` naming it
(``redis+cluster://127.0.0.1:<port>``), stops it and exits with the command's status; CI runs
the suite's Redis tests so (``scripts/test-cluster``). Tests that move slots or fail a master
over start one of their own with ``LocalRedisCluster``."""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

WAIT_SECONDS = 30.0


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_ports(count: int) -> list[int]:
    """``count`` consecutive ports, each free with its cluster bus port (port + 10000)."""
    for _ in range(200):
        base = random.randrange(20000, 30000 - count)
        ports = list(range(base, base + count))
        if all(_free(p) and _free(p + 10000) for p in ports):
            return ports
    raise RuntimeError("no free ports for a Redis Cluster")


class LocalRedisCluster:
    def __init__(self, folder: Path, *, masters: int = 3, replicas: int = 1):
        self.folder = Path(folder)
        self.masters, self.replicas = masters, replicas
        self.ports = _free_ports(masters * (1 + replicas))
        self.processes: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}"

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=5)

    def start(self) -> LocalRedisCluster:
        for port in self.ports:
            self.start_node(port)
        subprocess.run(
            [
                "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=WAIT_SECONDS,
        )
        self.wait_until_ok()
        return self

    def start_node(self, port: int) -> None:
        folder = self.folder / str(port)
        folder.mkdir(parents=True, exist_ok=True)
        log = open(folder / "redis.log", "ab")  # noqa: SIM115 - the child process's output, closed by hand below
        self.processes[port] = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "1000",
                "--dir",
                str(folder),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                if self.node(port).ping():
                    return
            except redis.exceptions.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {port} did not start")
            time.sleep(0.05)

    def master_of(self, slot: int) -> int:
        """The port of the master that serves ``slot``, as the first node that answers says."""
        for port in self.processes:
            try:
                ranges = self.node(port).execute_command("CLUSTER", "SLOTS")
            except redis.exceptions.RedisError:
                continue
            for start, end, master, *_ in ranges:
                if start <= slot <= end:
                    return int(master[1])
        raise RuntimeError(f"no node of the cluster names a master of slot {slot}")

    def stop_node(self, port: int) -> None:
        process = self.processes.pop(port)
        process.kill()
        process.wait(timeout=WAIT_SECONDS)

    def wait_until_ok(self) -> None:
        """Until every running node says the cluster is ok and every slot has a master."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                infos = [self.node(p).cluster("INFO") for p in self.processes]
                if all(i["cluster_state"] == "ok" and int(i["cluster_slots_ok"]) == 16384 for i in infos):
                    return
            except redis.exceptions.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the Redis Cluster did not become ok")
            time.sleep(0.1)

    def stop(self) -> None:
        for port in list(self.processes):
            self.stop_node(port)


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: python -m tests.redis_cluster -- <command ...>")
    folder = Path(tempfile.mkdtemp(prefix="redis-cluster-"))
    cluster = LocalRedisCluster(folder)
    try:
        cluster.start()
        print(f"Redis Cluster at {cluster.url} (ports {cluster.ports[0]}-{cluster.ports[-1]})", flush=True)
        env = dict(os.environ, REDIS_URL=cluster.url, TEST_REDIS_URL=cluster.url)
        return subprocess.run(args, env=env).returncode
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
