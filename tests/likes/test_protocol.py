"""The like protocol's vocabulary is defined once, in ``likes.protocol``: the Lua scripts get
every flag, member name and answer code by name from its prelude, and spell none of them as a
literal of their own; what they answer reads back as the typed ``LikeResult``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from likes import live, protocol
from likes.protocol import LikeOutcome, LikeResult

LUA_DIR = Path(live.__file__).resolve().parent / "lua"
# The member names of a state, which no script may spell: a script that wrote '0' or 'p' would
# go on working when the Python side renamed them, with states no longer understood.
MEMBER_NAMES = {protocol.SENTINEL, protocol.PARTIAL}
# After these a minus is a sign: ``return -1``, ``{-3, 0}``, ``~= -1``. After a name, a number,
# a closing bracket or a string it is a subtraction (``now - WRITTEN_WINDOW_MS``, ``i - 1``).
SIGN_AFTER = {"return", "and", "or", "not", "then", "else", "elseif", "do", "in", "until"}


def lua_files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(LUA_DIR.glob("*.lua"))}


def without_comments(source: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in source.splitlines())


def string_literals(source: str) -> list[str]:
    return [match.group(2) for match in re.finditer(r"(['\"])(.*?)\1", without_comments(source))]


def code_only(source: str) -> str:
    """Without comments, and each string literal as ``S``."""
    return re.sub(r"(['\"]).*?\1", "S", without_comments(source))


def negative_literals(source: str) -> list[str]:
    """Numbers written with a minus sign (not subtractions), outside comments and strings."""
    tokens = re.findall(r"\d+(?:\.\d+)?|[A-Za-z_]\w*|\S", code_only(source))
    found = []
    for i, token in enumerate(tokens[:-1]):
        if token != "-" or not re.fullmatch(r"\d+(?:\.\d+)?", tokens[i + 1]):
            continue
        before = tokens[i - 1] if i else None
        subtraction = before is not None and (
            (re.fullmatch(r"\w+", before) is not None and before not in SIGN_AFTER) or before in {")", "]", "}", "S"}
        )
        if not subtraction:
            found.append("-" + tokens[i + 1])
    return found


def test_the_finders_find_what_they_look_for():
    """The checks below can fail: they see a bare flag, code or member name when there is one."""
    assert negative_literals("if x == -1 then return {-4, now} end\nlocal a = PARTIAL_BASE -10") == ["-1", "-4"]
    assert negative_literals("return -10") == ["-10"]
    assert negative_literals("local y = now - 1 - x[2] -- -3 in a comment\nz = f(a) - 2") == []
    assert negative_literals("redis.call('ZADD', k, '-inf', m)") == []
    assert string_literals("redis.call('ZSCORE', key, 'p') -- 'x'") == ["ZSCORE", "p"]


@pytest.mark.parametrize("name", sorted(lua_files()))
def test_no_script_spells_a_flag_an_answer_code_or_a_member_name(name):
    source = lua_files()[name]
    assert negative_literals(source) == [], f"{name}: use the constants of likes/protocol.py"
    assert MEMBER_NAMES.isdisjoint(string_literals(source)), f"{name}: use SENTINEL and PARTIAL"


def test_every_constant_the_scripts_use_comes_from_the_prelude_and_every_one_is_used():
    sources = "\n".join(code_only(text) for text in lua_files().values())
    used = set(re.findall(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b", sources)) - {"KEYS", "ARGV"}
    assert used == set(protocol.LUA_CONSTANTS)
    for script in (live.LIKE, live.PUBLISH, live.ACKNOWLEDGE, live.PAGE_STATE, live.CREATE_STATE):
        assert script.source.startswith(protocol.lua_prelude())


def test_the_scripts_see_the_values_python_has(raw_redis):
    """What Lua reads under each name is what Python defines (strings and numbers alike)."""
    names = list(protocol.LUA_CONSTANTS)
    answer = raw_redis.eval(protocol.lua_prelude() + f"return {{{', '.join(f'tostring({n})' for n in names)}}}", 0)
    assert dict(zip(names, answer, strict=True)) == {n: str(v) for n, v in protocol.LUA_CONSTANTS.items()}


def test_the_answer_codes_are_the_outcomes():
    assert {protocol.LUA_CONSTANTS[f"ANSWER_{o.name}"] for o in LikeOutcome if o is not LikeOutcome.DONE} == {
        -1,
        -2,
        -3,
        -4,
    }
    assert LikeResult.of_reply(0, 0) == LikeResult(LikeOutcome.DONE, count=0, liked=False)
    assert LikeResult.of_reply(7, 1) == LikeResult(LikeOutcome.DONE, count=7, liked=True)
    assert LikeResult.of_reply(LikeOutcome.COLD.value, 1234) == LikeResult(LikeOutcome.COLD, since=1234)
    assert LikeResult.of_reply(LikeOutcome.NEEDS_USER.value, 99) == LikeResult(LikeOutcome.NEEDS_USER, since=99)
    assert LikeResult.of_reply(LikeOutcome.NEEDS_CHECK.value, 0) == LikeResult(LikeOutcome.NEEDS_CHECK)
    assert LikeResult.of_reply(LikeOutcome.LOAD_CAREFULLY.value, 0) == LikeResult(LikeOutcome.LOAD_CAREFULLY)


def test_the_flags_sort_below_every_like_and_the_partial_marker_below_the_flags():
    """Likers are the members scored >= 0 (like times); the sentinel's flags and UNLIKED are
    negative, and a partial marker, PARTIAL_BASE minus its count, is below all of them."""
    assert protocol.PARTIAL_BASE < min(protocol.OPEN, protocol.CHECK, protocol.UNLIKED) < 0
    assert len({protocol.OPEN, protocol.CHECK, protocol.UNLIKED}) == 3
    # Neither member name can be a user's (user ids are >= 1).
    assert all(not name.isdigit() or int(name) < 1 for name in MEMBER_NAMES) and len(MEMBER_NAMES) == 2
