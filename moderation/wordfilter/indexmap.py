"""The index map: where each normalization step changed the length of the text, so that a hit
in the normalized text is mapped back to its span in the original (built only when something
matched; see "Spans and masking" in the package's docstring).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable

from .chars import _Patterns
from .normalize import _cjk_joined, _fold, _Normalized


class _Step:
    """Where one normalization step changed the length of the text: edits ``(in_start, in_end)``
    of its input became ``(out_start, out_end)`` of its output; elsewhere characters map one to
    one, shifted by the edits before them."""

    __slots__ = ("out_starts", "edits")

    def __init__(self) -> None:
        self.out_starts: list[int] = []
        self.edits: list[tuple[int, int, int, int]] = []

    def add(self, in_start: int, in_end: int, out_start: int, out_end: int) -> None:
        self.out_starts.append(out_start)
        self.edits.append((in_start, in_end, out_start, out_end))

    def removals(self, spans: Iterable[tuple[int, int]]) -> None:
        """Record the removal of the (sorted, disjoint) spans of the input."""
        removed = 0
        for a, b in spans:
            self.add(a, b, a - removed, a - removed)
            removed += b - a

    def back(self, lo: int, hi: int) -> tuple[int, int]:
        """The input range that produced the output range [lo, hi) (hi > lo)."""
        return self._at(lo)[0], self._at(hi - 1)[1]

    def _at(self, pos: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.out_starts, pos) - 1
        if i < 0:
            return pos, pos + 1
        in_start, in_end, _, out_end = self.edits[i]
        if pos < out_end:
            return in_start, in_end
        q = pos - out_end + in_end
        return q, q + 1


def _mapped(text: str, norm: _Normalized, p: _Patterns, collapse: bool) -> tuple[_Normalized, list[_Step]]:
    """Where each normalization step changed the length of the text, to map hits back to it;
    and the normalized text those steps describe: ``norm``, unless the tables missed a character
    and folding the text chunk by chunk does not give ``norm.b`` (then the later steps are redone
    on what it gives). Used only when something matched."""
    steps = []

    # A. ignorable characters
    step = _Step()
    if len(norm.a) != len(text):
        step.removals(m.span() for m in p.ignorable.finditer(text))
    steps.append(step)

    # B. NFKC + casefold: the chunks (a character with the marks or jamo that compose with it,
    # or one that folds to several characters, with its marks); in between, every character
    # folds to exactly one and none composes with another.
    s = norm.a
    chunks = []
    if not s.isascii():
        pos = 0
        for m in p.chunk.finditer(s):
            a, b = m.span()
            if a > pos and p.attach.match(s, a):
                a -= 1  # marks with the character before them
            chunks.append((a, b, len(unicodedata.normalize("NFKC", s[a:b]).casefold())))
            pos = b
    step = _Step()
    delta = 0  # output position - input position
    for a, b, size in chunks:
        if size != 1 or b - a != 1:
            step.add(a, b, a + delta, a + delta + size)
            delta += size - (b - a)
    if len(s) + delta != len(norm.b):  # the tables missed a character: the slow way
        step, folded = _fold_mapped(s, p)
        if folded != norm.b:
            redone = _redo(norm.a, folded, p, collapse, norm.singles)
            return redone, [steps[0], step, *_later_steps(redone, p, collapse)]
    steps.append(step)
    return norm, [*steps, *_later_steps(norm, p, collapse)]


def _fold_mapped(s: str, p: _Patterns) -> tuple[_Step, str]:
    """Step B recorded without trusting the tables: the chunks folded one by one, the runs in
    between as wholes, split in halves where one changes length (each character folds to at
    least one, so a part that keeps its length maps one to one)."""
    step = _Step()
    pieces: list[str] = []
    delta = 0

    def chunk(a: int, b: int, folded: str) -> None:
        nonlocal delta
        pieces.append(folded)
        if len(folded) != 1 or b - a != 1:
            step.add(a, b, a + delta, a + delta + len(folded))
            delta += len(folded) - (b - a)

    def run(a: int, b: int) -> None:
        if a == b:
            return
        folded = _fold(s[a:b], p)
        if len(folded) == b - a:
            pieces.append(folded)
        elif b - a == 1:
            chunk(a, b, folded)
        else:
            mid = (a + b) // 2
            run(a, mid)
            run(mid, b)

    pos = 0
    for m in p.attach.finditer(s):
        a, b = max(m.start() - 1, pos), m.end()
        run(pos, a)
        chunk(a, b, unicodedata.normalize("NFKC", s[a:b]).casefold())
        pos = b
    run(pos, len(s))
    return step, "".join(pieces)


def _redo(a: str, b: str, p: _Patterns, collapse: bool, join_singles: bool) -> _Normalized:
    c = b.replace("_", " ")
    if collapse:
        c = " ".join(c.split())
    mid = _cjk_joined(c, p)
    return _Normalized(a, b, c, mid, p.single_join.sub("", mid) if join_singles else mid, join_singles)


def _later_steps(norm: _Normalized, p: _Patterns, collapse: bool) -> list[_Step]:
    """Steps C and D of ``norm``, recorded where they changed the length of the text."""
    # C. underscores (one to one), whitespace runs
    step_c = _Step()
    if len(norm.c) != len(norm.b):
        s = norm.b.replace("_", " ")
        delta = 0
        for m in re.finditer(r"\s+", s):
            a, b = m.span()
            width = 0 if a == 0 or b == len(s) else 1
            if width == 1 and b - a == 1 and s[a] == " ":
                continue
            step_c.add(a, b, a + delta, a + delta + width)
            delta += width - (b - a)
    # D. separators between CJK characters, between single letters
    step_d1 = _Step()
    if len(norm.mid) != len(norm.c):
        if norm.c.count(" ") * 16 > len(norm.c):  # as _cjk_joined
            step_d1.removals((m.end(1), m.end()) for m in p.cjk_pairs.finditer(norm.c))
        else:
            step_d1.removals(m.span() for m in p.cjk_join.finditer(norm.c))
    step_d2 = _Step()
    if len(norm.text) != len(norm.mid):
        step_d2.removals(m.span() for m in p.single_join.finditer(norm.mid))
    return [step_c, step_d1, step_d2]


def _back(steps: list[_Step], start: int, end: int) -> tuple[int, int]:
    for step in reversed(steps):
        if step.edits:
            start, end = step.back(start, end)
    return start, end
