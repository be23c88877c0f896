"""The Lua scripts live in ``likes/lua/`` (the like state's) and ``infra/lua/`` (the streams'),
one file each, and every file there is used: as a script of ``likes.live`` or
``infra.streams``, or as functions a script includes. Each one compiles in the suite's real
Redis to the SHA the module calls it by."""

from __future__ import annotations

from pathlib import Path

from infra import streams
from infra.luascript import Script
from likes import live

LUA_DIRS = [Path(module.__file__).resolve().parent / "lua" for module in (live, streams)]
SCRIPTS = {
    name: value for module in (live, streams) for name, value in vars(module).items() if isinstance(value, Script)
}


def test_every_lua_file_is_a_script_or_included_by_one():
    files = {path.stem: path.read_text() for directory in LUA_DIRS for path in directory.glob("*.lua")}
    used = {stem for stem, text in files.items() if any(text in script.source for script in SCRIPTS.values())}
    assert set(files) == used
    assert {name.lower() for name in SCRIPTS} <= set(files)


def test_every_script_compiles_in_redis_to_the_sha_it_is_called_by(raw_redis):
    raw_redis.script_flush()
    for name, script in SCRIPTS.items():
        assert raw_redis.script_load(script.source) == script.sha, name
    assert all(raw_redis.script_exists(*(s.sha for s in SCRIPTS.values())))
