"""Materialized paths: every ancestor's id, top-level first, then the comment's own.

Each step is the id in base 36, zero-padded to ``STEP`` characters (36**11 > 2**53), so
comparing paths bytewise (collation "C") walks the tree depth-first with siblings in id order,
which is time order. A subtree is the range ``[path, path + "~")`` because ``"~"`` sorts after
every base-36 digit.
"""

from __future__ import annotations

import string

STEP = 11
# The deepest tree the path column can hold: COMMENTS_MAX_DEPTH may be set lower, never higher
# (the column width is part of the schema, not a runtime setting; 129 steps also stay under
# PostgreSQL's B-tree entry size limit).
MAX_DEPTH_SUPPORTED = 128
DIGITS = string.digits + string.ascii_lowercase
SUBTREE_END = "~"


def encode_step(value: int) -> str:
    if value < 0 or value >= 36**STEP:
        raise ValueError("id out of range for a path step")
    chars = []
    while value:
        value, rem = divmod(value, 36)
        chars.append(DIGITS[rem])
    return "".join(reversed(chars)).rjust(STEP, "0")


def decode_step(step: str) -> int:
    return int(step, 36)


def split_path(path: str) -> list[int]:
    """The ids along ``path``, top-level first, the comment's own last."""
    if not path or len(path) % STEP:
        raise ValueError(f"malformed path {path!r}")
    return [decode_step(path[i : i + STEP]) for i in range(0, len(path), STEP)]


def child_path(parent_path: str, comment_id: int) -> str:
    return parent_path + encode_step(comment_id)


def depth_of(path: str) -> int:
    return len(path) // STEP - 1


def parent_path(path: str) -> str:
    return path[:-STEP]


def subtree_bounds(path: str) -> tuple[str, str]:
    """``[low, high)`` holding ``path`` and every descendant."""
    return path, path + SUBTREE_END


def max_path_length(max_depth: int) -> int:
    return STEP * (max_depth + 1)
