"""Lua scripts run by their SHA: a script is loaded into Redis on its first NOSCRIPT, so a call
is one round trip normally."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster


class Script:
    """A Lua script, run by its SHA, loaded into Redis on the first NOSCRIPT."""

    def __init__(self, source: str):
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    @classmethod
    def load(cls, directory: Path, name: str, *, prelude: str = "", includes: tuple[str, ...] = ()) -> Script:
        """``<directory>/<name>.lua``, after ``prelude`` (constants shared with Python, declared
        once there) and the files it ``includes`` (functions it calls)."""
        parts = [prelude, *((directory / f"{part}.lua").read_text() for part in (*includes, name))]
        return cls("".join(parts))

    def __call__(self, r: redis.Redis | RedisCluster, keys_: list[str], args: list) -> Any:
        try:
            return r.evalsha(self.sha, len(keys_), *keys_, *args)
        except redis.exceptions.NoScriptError:
            r.script_load(self.source)
            return r.evalsha(self.sha, len(keys_), *keys_, *args)

    def queue(self, pipe, keys_: list[str], args: list) -> None:
        pipe.evalsha(self.sha, len(keys_), *keys_, *args)

    def command(self, keys_: list[str], args: list) -> tuple:
        """The call as a command for ``redislink.round_trip``."""
        return ("EVALSHA", self.sha, len(keys_), *keys_, *args)
