"""The matching engine of the moderation word filter: pure Python (standard library and
``pyahocorasick``), no Django, no database, no cache. ``words.py`` builds one ``WordFilter``
per site and one for the global list and swaps them when the list changes.

Normalization
-------------
Text and entry words go through the same steps, each a C-speed operation on the whole string:

A. *Ignorable characters removed*: format characters (category Cf: zero-width space, joiners,
   word joiner, BOM, soft hyphen, bidi controls, tags...) and the other default-ignorable
   code points that render as nothing (combining grapheme joiner, variation selectors, Hangul
   fillers, Mongolian variation selectors): ``b\\u200bad`` reads ``bad``.
B. *NFKC, then ``str.casefold()``*: full-width forms become ASCII (``ＢＡＤ`` -> ``bad``),
   ligatures and compatibility characters expand (``ﬁ`` -> ``fi``, ``①`` -> ``1``), case
   folds (``ß`` -> ``ss``, ``Σ``/``ς`` -> ``σ``). (NFKC is computed without CPython's slow
   composition pass where it is not needed; the result is exactly ``unicodedata``'s NFKC.)
C. *Whitespace* (only for a list with multi-word entries, and always for entry words): every
   run of whitespace and ``_`` becomes one space, so ``bad \\n\\n word`` matches ``bad word``.
D. *Separators between single letters dropped*: a run of 1-3 separator characters
   (whitespace, punctuation, symbols, emoji, ``_``) between two single-letter tokens (a letter
   or digit with no letter, digit or mark right before or after it) is removed: ``b.a.d``,
   ``b a d``, ``b-a-d``, ``b_a_d``, ``b . a . d`` all read ``bad``. Han, Hiragana and Katakana
   characters are each a token of their own (these scripts put no spaces between words), so
   separators between two of them are dropped too: ``敏 感 词``, ``敏.感.词`` and ``这是敏*感*词啊``
   read ``敏感词``/``这是敏感词啊``. Real words are never joined: in ``grab a dog`` only ``a`` is
   a single letter, and nothing changes.

An entry's word is normalized the same way (with step C), then stripped of surrounding
whitespace; a word without any letter or digit left (``...``) is unusable and skipped.

Matching and word boundaries
----------------------------
An entry with ``inside_words=False`` matches only at word boundaries in the normalized text:
an edge of the match is *not* a boundary when the match's edge character and its neighbour
outside the match are both word characters, that is letters, digits or combining marks of a
script that separates words with spaces. Han, Hiragana, Katakana, Hangul, Bopomofo, Thai, Lao,
Khmer and Myanmar never count as word characters, so ``敏感词`` matches inside ``这是敏感词啊``
while ``ass`` does not match in ``class``, ``assist`` or ``grass``. Digits count (``bad1``
does not match ``bad``). This is the regular-expression ``\\b`` rule with CJK-like scripts as
non-word characters; an entry whose edge is itself a separator (``.net``, ``c++``) needs no
boundary on that side. ``inside_words=True`` entries match anywhere.

One exception: where step D joined single letters across whitespace, the position is a
possible word boundary ("soft"), because spaced-out letters may be several words: ``a b.a.d``
and ``I said b a d`` match ``bad`` (the article is joined to the letters), ``c l a s s``
matches ``ass`` too. Dots or dashes alone do not make soft boundaries: ``c.l.a.s.s`` does not.

Entries whose word is made only of word characters and that need boundaries (the bulk of a
list) are matched by looking up the words of the text in a hash set; the others (CJK words,
multi-word entries, words with symbols, ``inside_words`` entries) go through one Aho-Corasick
automaton, as do the words around soft boundaries. Entries normalizing to the same key share it.

Spans and masking
-----------------
Hits are reported with their span in the *original* text, from the first to the last original
character that produced the match (separators and ignorable characters in between included).
The span needs a normalized->original index map, which is built only when there is a hit: each
step records where it changed the length of the text, and positions are mapped back through
the steps. NFKC and casefold are mapped per "chunk" (a character with the marks or jamo that
compose with it); a chunk that expands (``ß`` -> ``ss``) or contracts (``e`` + U+0301 -> ``é``)
maps all its normalized characters to the whole chunk.

``mask`` replaces, inside the union of the given spans, every original character that is (or
normalizes to) a letter or digit by one ``*`` and drops the combining marks attached to a masked
character (a letter with its accents becomes one ``*``); separators, symbols, emoji, spaces and
ignorable characters inside a span are kept, and everything outside the spans is returned exactly
as written: ``b.a.d`` -> ``*.*.*``, ``ＢＡＤ`` -> ``***``, ``Straße`` (entry ``strasse``) ->
``******``. The text keeps its length in characters unless a masked span contains combining
marks.

Performance: with no hit (the common case) a scan is a few whole-string passes (ignorable
characters, NFKC, casefold, the separator joining, the word split), one automaton pass and a
set intersection; the index map is built only when something matched.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain, compress, repeat

import ahocorasick

__all__ = ["ACTIONS", "EMPTY", "Entry", "Hit", "WordFilter", "normalize_text", "normalize_word"]

ACTIONS = ("block", "review", "mask")  # severity order for callers: block > review > mask


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    word: str
    action: str  # one of ACTIONS
    inside_words: bool = False  # also match inside longer words (e.g. "ass" in "class")


@dataclass(frozen=True, slots=True)
class Hit:
    entry_id: int
    word: str  # the entry's word, as written in the list
    action: str
    start: int  # span in the original text, start inclusive,
    end: int  # end exclusive: first to last original character of the match


# --- character classes ---------------------------------------------------------------------

# Scripts that do not separate words with spaces: never "word characters" for the boundary rule.
_NOSPACE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x318F),  # Bopomofo, Hangul compatibility Jamo
    (0x31A0, 0x31FF),  # Bopomofo extended, Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xA9E0, 0xA9FF),  # Myanmar extended B
    (0xAA60, 0xAA7F),  # Myanmar extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # half-width Katakana and Hangul (NFKC maps them away anyway)
    (0x16FE0, 0x16FFF),  # ideographic symbols
    (0x1B000, 0x1B16F),  # kana supplement, extended
    (0x20000, 0x323AF),  # CJK extensions B-H, compatibility supplement
)

# Han, Hiragana, Katakana: each character is a token of its own for the separator joining.
_CJK_JOIN_RANGES = (
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3031, 0x3035),
    (0x3038, 0x303C),
    (0x3041, 0x3096),  # Hiragana
    (0x309D, 0x309F),
    (0x30A1, 0x30FA),  # Katakana (not U+30A0 ゠ nor U+30FB ・, which are punctuation)
    (0x30FC, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x1B000, 0x1B16F),
    (0x20000, 0x323AF),
)

# Default-ignorable code points that are not format characters (those are found by category).
_EXTRA_IGNORABLE = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong/jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors, vowel separator
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement
)

# Characters that compose with the character before them under NFKC besides the combining marks
# (found by category): conjoining Hangul vowels and final consonants, and the compatibility
# characters whose NFKC form starts with one of those or with a mark (Thai/Lao sara am, Hangul
# compatibility jamo, half-width voiced sound marks and Hangul). Checked by the tests over every
# code point.
_EXTRA_ATTACH = (
    (0x0E33, 0x0E33),
    (0x0EB3, 0x0EB3),
    (0x1160, 0x11FF),
    (0x3131, 0x318E),
    (0xD7B0, 0xD7FF),
    (0xFF9E, 0xFF9F),
    (0xFFA0, 0xFFDC),
)

# Astral code points get coarse ranges (exact ones would make every regex test slow: only the
# Basic Multilingual Plane gets a bitmap). Letters, digits and marks of the supplementary
# multilingual plane up to U+1EFFF (historic and minority scripts) and the ideographic planes
# count as word material; U+1F000-U+1FFFF (emoji, symbols) as separators.
_ASTRAL_NONSEP = ((0x10000, 0x1EFFF),)  # with \w, which has the ideographic planes
_ASTRAL_WORD = ((0x10000, 0x16FDF), (0x17000, 0x1AFFF), (0x1B170, 0x1EFFF))
_ASTRAL_COMPAT = ((0x2F800, 0x2FA1F),)  # CJK compatibility ideographs supplement (not scanned)

_CLASS_SPECIAL = frozenset("\\[]^-&~|")


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    """The inside of a regex character class for the given inclusive code point ranges
    (literal characters: much faster to compile than escapes)."""

    def lit(cp: int) -> str:
        ch = chr(cp)
        return "\\" + ch if ch in _CLASS_SPECIAL else ch

    return "".join(lit(lo) if lo == hi else f"{lit(lo)}-{lit(hi)}" for lo, hi in ranges)


def _ranges(code_points: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted inclusive ranges covering exactly the code points."""
    out: list[tuple[int, int]] = []
    for cp in sorted(code_points):
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _expand(ranges: Iterable[tuple[int, int]]) -> set[int]:
    return set(chain.from_iterable(range(lo, hi + 1) for lo, hi in ranges))


def _coarse(ranges: Iterable[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """The ranges with those less than ``gap`` apart merged."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


# The code points categorized when the tables are built: all but surrogates and the planes
# above the supplementary multilingual one (no marks or format characters there except in
# plane 14, which is ignorable as a whole).
_CATEGORIZED = ((0x0000, 0xD7FF), (0xE000, 0x1FFFF))
_MARK, _FORMAT, _LETTER = 1, 2, 3  # _LETTER: letters and digits
_CATEGORY_CODES = {"Mn": _MARK, "Mc": _MARK, "Me": _MARK, "Cf": _FORMAT}
_CATEGORY_CODES.update(dict.fromkeys(("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"), _LETTER))
_BMP_END = 0x10000


def _code_ranges(codes: bytes | bytearray, pattern: bytes) -> list[tuple[int, int]]:
    """The code point ranges whose codes (one byte per categorized code point) match pattern."""
    out = []
    offset = 0
    for lo, hi in _CATEGORIZED:
        part = codes[offset : offset + hi - lo + 1]
        out += [(lo + m.start(), lo + m.end() - 1) for m in re.finditer(pattern, part)]
        offset += hi - lo + 1
    return out


class _Patterns:
    """The regular expressions of the normalization, for texts with astral characters or, with
    the astral parts of the classes left out, for texts without (the regex engine tests a BMP
    character against a class with a bitmap, but then against every astral range of it, one by
    one: a few ranges cost as much as the bitmap)."""

    def __init__(self, classes: dict[str, list[tuple[int, int]]], astral: bool):
        def cls(name: str) -> str:
            ranges = classes[name] if astral else [(lo, min(hi, _BMP_END - 1)) for lo, hi in classes[name] if lo < _BMP_END]
            return _class(ranges)

        # Letters, digits and marks: separators are everything else. \w is letters, digits and
        # "_", which step C turns into a space.
        nonsep = "\\w" + cls("marks")
        S, W, C = f"[^{nonsep}]", f"[{nonsep}]", f"[{cls('cjk')}]"

        # Steps A and B: the characters to remove or to replace by their NFKC form.
        self.special = re.compile(f"[{cls('ignorable')}{cls('compat')}]")
        self.ignorable = re.compile(f"[{cls('ignorable')}]+")
        # Step B, index map only: a character with the ones that compose with it.
        self.attach = re.compile(f"[{cls('attach')}]+")
        # Step D: 1-3 separators after a single-letter token or a CJK character and before
        # another. The match is the separators alone and starts with one, so that the regex
        # engine only tries the positions that hold a separator.
        self.join = re.compile(f"{S}(?:(?<={C}.)|(?<={W}.)(?<!{W}..)){S}{{0,2}}(?={C}|{W}(?!{W}))")
        # The words of spaced scripts (letters, digits, marks; the boundary rule's word characters).
        self.word = re.compile(f"[{cls('word')}]+")
        self.wordch = re.compile(f"[{cls('word')}]")


class _Tables:
    """The character tables and patterns, built once per process on first use (~100 ms on a
    slow machine; importing the module costs nothing)."""

    def __init__(self) -> None:
        chars = array("I", chain.from_iterable(range(lo, hi + 1) for lo, hi in _CATEGORIZED)).tobytes().decode("utf-32-le")
        codes = bytearray(map(_CATEGORY_CODES.get, map(unicodedata.category, chars), repeat(0)))
        marks = _code_ranges(codes, b"\x01+")
        formats = _code_ranges(codes, b"\x02+")
        offset = 0
        for first, last in _CATEGORIZED:  # letters of spaced scripts only from here on
            for lo, hi in _NOSPACE_RANGES:
                lo, hi = max(lo, first), min(hi, last)
                if lo <= hi:
                    codes[offset + lo - first : offset + hi - first + 1] = bytes(hi + 1 - lo)
            offset += last - first + 1
        spaced = [r for r in _code_ranges(codes, b"[\x01\x03]+") if r[0] < _BMP_END]
        decomposable = compress(chars, map(unicodedata.decomposition, chars))
        compat = _ranges(ord(c) for c in decomposable if unicodedata.normalize("NFKC", c) != c)

        def coarse_astral(ranges: Iterable[tuple[int, int]], gap: int = 64) -> list[tuple[int, int]]:
            ranges = list(ranges)
            return [r for r in ranges if r[1] < _BMP_END] + _coarse((r for r in ranges if r[1] >= _BMP_END), gap)

        ignorable = _expand([*formats, *_EXTRA_IGNORABLE])
        # Astral format characters other than tags are historic-script controls: not worth a range.
        self.ignorable = frozenset(cp for cp in ignorable if cp < _BMP_END or cp >= 0xE0000)
        self._classes = {
            "ignorable": _ranges(self.ignorable),
            "compat": coarse_astral([*compat, *_ASTRAL_COMPAT], 4096),
            "attach": coarse_astral(_ranges(_expand([*marks, *_EXTRA_ATTACH]) - ignorable)),
            "marks": coarse_astral([*marks, *_ASTRAL_NONSEP]),
            "cjk": list(_CJK_JOIN_RANGES),
            "word": [*spaced, *_ASTRAL_WORD],
        }
        self.bmp = _Patterns(self._classes, astral=False)

    @functools.cached_property
    def full(self) -> _Patterns:
        return _Patterns(self._classes, astral=True)

    def patterns(self, text: str) -> _Patterns:
        """The patterns for this text (and anything normalized from it)."""
        if text.isascii() or len(text.encode("utf-16-le", "surrogatepass")) == 2 * len(text):
            return self.bmp
        return self.full


@functools.cache
def _tables() -> _Tables:
    return _Tables()


# --- normalization -------------------------------------------------------------------------


def _clean(s: str, p: _Patterns) -> str:
    """Steps A and B but case folding: ignorable characters removed, then NFKC.

    CPython's NFKC is slow when the text is not NFKC already (its composition pass costs ~200 ns
    a character in CJK or Thai text, 1 ms for 5,000 characters), which a Chinese comment with
    full-width punctuation never is. So: the compatibility characters found are replaced by
    their NFKC form, which keeps the text's NFKD, hence its NFKC; if the result passes the quick
    check it is the text's NFKC. Otherwise NFKD then NFC, which is NFKC by definition and quick
    when nothing composes."""
    found = set(p.special.findall(s))
    compat = found
    if found:
        ignorable = _tables().ignorable
        removed = [ch for ch in found if ord(ch) in ignorable]
        if removed:
            compat = found.difference(removed)
            if len(removed) <= 8:
                for ch in removed:
                    s = s.replace(ch, "")
            else:
                s = p.ignorable.sub("", s)
    if unicodedata.is_normalized("NFKC", s):
        return s
    if len(compat) <= 16:
        out = s
        for ch in compat:
            out = out.replace(ch, unicodedata.normalize("NFKC", ch))
        if unicodedata.is_normalized("NFKC", out):
            return out
    return unicodedata.normalize("NFC", unicodedata.normalize("NFKD", s))


def _fold(s: str, p: _Patterns | None = None) -> str:
    """Steps A and B: ignorable characters removed, NFKC, case folding."""
    if s.isascii():
        return s.lower()
    return _clean(s, p or _tables().patterns(s)).casefold()


def _prepared(text: str, p: _Patterns, collapse: bool) -> str:
    """Steps A-C."""
    s = _fold(text, p).replace("_", " ")
    return " ".join(s.split()) if collapse else s


def _soft(pre: str, post: str, p: _Patterns) -> frozenset[int]:
    """The soft word boundaries of ``post`` (``pre`` after step D): where step D removed
    separators with a space or a line break between two letters of spaced scripts."""
    if len(pre) == len(post) or (pre.count(" ") == post.count(" ") and pre.count("\n") == post.count("\n")):
        return frozenset()
    soft = []
    removed = 0
    for m in p.join.finditer(pre):
        a, b = m.span()
        sep = m.group()
        if (" " in sep or "\n" in sep) and p.wordch.match(pre, a - 1) and p.wordch.match(pre, b):
            soft.append(a - removed)
        removed += b - a
    return frozenset(soft)


def normalize_text(text: str) -> str:
    """The text as the filter reads it (steps A-D of the module docstring, with C)."""
    p = _tables().patterns(text)
    return p.join.sub("", _prepared(text, p, True))


def normalize_word(word: str) -> str:
    """An entry's word as it is matched: the text normalization, surrounding whitespace removed;
    "" (an unusable entry) when no letter or digit is left."""
    key = normalize_text(word).strip(" ")
    return key if any(ch.isalnum() for ch in key) else ""


# --- the index map -------------------------------------------------------------------------


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


def _mapped(text: str, p: _Patterns, collapse: bool) -> tuple[str, str, list[_Step]]:
    """Steps A-D recording where each changed the text, to map hits back to it: the text
    before and after step D, and the steps. Used only when something matched. NFKC and case
    folding run per chunk (a character with the marks or jamo that compose with it) where the
    text has such chunks, and on whole runs of characters elsewhere."""
    steps = []

    # A. ignorable characters
    step = _Step()
    s = text
    if not text.isascii():
        removed = 0
        for m in p.ignorable.finditer(text):
            a, b = m.span()
            step.add(a, b, a - removed, a - removed)
            removed += b - a
        if removed:
            s = p.ignorable.sub("", text)
    steps.append(step)

    # B. NFKC + casefold
    step = _Step()
    if s.isascii():
        s = s.lower()
    else:
        pieces: list[str] = []
        delta = 0  # output position - input position

        def chunk(a: int, b: int, folded: str) -> None:
            nonlocal delta
            pieces.append(folded)
            if len(folded) != 1 or b - a != 1:
                step.add(a, b, a + delta, a + delta + len(folded))
                delta += len(folded) - (b - a)

        def run(a: int, b: int) -> None:
            # No character of a run composes with another and each folds to at least one
            # character: if the run keeps its length, every character folds to exactly one.
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
            a, b = max(m.start() - 1, pos), m.end()  # the marks with the character before them
            run(pos, a)
            chunk(a, b, _fold(s[a:b], p))
            pos = b
        run(pos, len(s))
        s = "".join(pieces)
    steps.append(step)

    # C. underscores (one to one), whitespace
    s = s.replace("_", " ")
    step = _Step()
    if collapse:
        delta = 0
        for m in re.finditer(r"\s+", s):
            a, b = m.span()
            width = 0 if a == 0 or b == len(s) else 1
            if width == 1 and b - a == 1 and s[a] == " ":
                continue
            step.add(a, b, a + delta, a + delta + width)
            delta += width - (b - a)
        s = " ".join(s.split())
    steps.append(step)

    # D. separators between single letters
    step = _Step()
    delta = 0
    for m in p.join.finditer(s):
        a, b = m.span()
        step.add(a, b, a + delta, a + delta)
        delta -= b - a
    steps.append(step)
    post = p.join.sub("", s) if step.edits else s
    return s, post, steps


def _back(steps: list[_Step], start: int, end: int) -> tuple[int, int]:
    for step in reversed(steps):
        if step.edits:
            start, end = step.back(start, end)
    return start, end


# --- the filter ----------------------------------------------------------------------------

_Match = tuple[int, int, Entry]


def _bytes_key(s: str) -> str:
    """The UTF-8 bytes of s as a str of code points < 256: the automatons work on those.
    (pyahocorasick finds a node's child by a linear search, so a root with thousands of CJK
    children makes every step cost microseconds; over UTF-8 bytes a node has < 256.)"""
    return s if s.isascii() else s.encode("utf-8", "surrogatepass").decode("latin-1")


def _char_offsets(s: str, byte_offsets: Iterable[int]) -> dict[int, int]:
    """Offsets in ``_bytes_key(s)`` (at character boundaries) -> offsets in s."""
    if s.isascii():
        return {b: b for b in byte_offsets}
    data = s.encode("utf-8", "surrogatepass")
    out = {}
    prev = chars = 0
    for b in sorted(set(byte_offsets)):
        chars += len(data[prev:b].decode("utf-8", "surrogatepass"))
        out[b] = chars
        prev = b
    return out


def _automaton(items: Iterable[tuple[str, object]]) -> ahocorasick.Automaton | None:
    automaton = ahocorasick.Automaton()
    for key, value in items:
        automaton.add_word(_bytes_key(key), value)
    if not len(automaton):
        return None
    automaton.make_automaton()
    return automaton


class WordFilter:
    """The compiled form of a word list. Immutable once built; safe to share between threads."""

    __slots__ = ("_count", "_words", "_word_keys", "_word_automaton", "_automaton", "_collapse")

    def __init__(self, entries: Iterable[Entry]):
        words: dict[str, list[Entry]] = {}  # keys of word characters only: entries with boundaries
        others: dict[str, tuple[list[Entry], list[Entry]]] = {}  # key -> (with boundaries, inside words)
        count = 0
        for entry in entries:
            if entry.action not in ACTIONS:
                raise ValueError(f"Entry {entry.id}: unknown action {entry.action!r}.")
            key = normalize_word(entry.word)
            if not key:
                continue
            count += 1
            if not entry.inside_words and _tables().patterns(key).word.fullmatch(key):
                words.setdefault(key, []).append(entry)
            else:
                others.setdefault(key, ([], []))[entry.inside_words].append(entry)
        self._count = count
        self._words = {key: tuple(found) for key, found in words.items()}
        self._word_keys = frozenset(words)
        self._word_automaton = _automaton(
            (key, (len(_bytes_key(key)), found)) for key, found in self._words.items()
        )
        self._automaton = _automaton(
            (key, (len(_bytes_key(key)), tuple(bounded), tuple(inside))) for key, (bounded, inside) in others.items()
        )
        self._collapse = any(" " in key for key in others)

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"<WordFilter: {self._count} entries>"

    def scan(self, text: str) -> list[Hit]:
        """Every hit in the text, in text order (by start, then end), overlapping hits included."""
        if not self._count or not text:
            return []
        p = _tables().patterns(text)
        pre = _prepared(text, p, self._collapse)
        post = p.join.sub("", pre)
        found = self._matches(pre, post, p)
        if not found:
            return []
        mapped_pre, mapped_post, steps = _mapped(text, p, self._collapse)
        if mapped_post != post:  # a composition across chunks the index map cannot follow (rare):
            found = self._matches(mapped_pre, mapped_post, p)  # match what the map describes
        hits = []
        for start, end, entry in found:
            a, b = _back(steps, start, end)
            hits.append(Hit(entry_id=entry.id, word=entry.word, action=entry.action, start=a, end=b))
        hits.sort(key=lambda h: (h.start, h.end, h.entry_id))
        return hits

    def _matches(self, pre: str, norm: str, p: _Patterns) -> list[_Match]:
        """The matches in the normalized text ``norm`` (``pre`` before step D)."""
        found: list[_Match] = []
        soft_cache: list[frozenset[int]] = []

        def soft() -> frozenset[int]:
            if not soft_cache:
                soft_cache.append(_soft(pre, norm, p))
            return soft_cache[0]

        if self._words:
            for key in self._word_keys.intersection(p.word.findall(norm)):
                self._find_word(norm, key, p, found)
            if len(pre) != len(norm) and soft():
                self._soft_words(norm, soft(), p, found)
        if self._automaton is not None:
            self._automaton_matches(norm, soft, p, found)
        return found

    def _find_word(self, norm: str, key: str, p: _Patterns, found: list[_Match]) -> None:
        """Every occurrence of a key made of word characters that is a whole word of ``norm``."""
        entries = self._words[key]
        size = len(key)
        i = norm.find(key)
        while i >= 0:
            end = i + size
            if (i == 0 or not p.wordch.match(norm, i - 1)) and not p.wordch.match(norm, end):
                found.extend((i, end, entry) for entry in entries)
            i = norm.find(key, i + 1)

    def _soft_words(self, norm: str, soft: frozenset[int], p: _Patterns, found: list[_Match]) -> None:
        """The word keys matching a part of a word that starts or ends at a soft boundary."""
        for m in p.word.finditer(norm):
            a, b = m.span()
            if not any(a < q < b for q in soft):
                continue
            word = m.group()
            raw = list(self._word_automaton.iter(_bytes_key(word)))
            offsets = _char_offsets(word, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _) in raw))
            for last, (size, entries) in raw:
                start, end = a + offsets[last + 1 - size], a + offsets[last + 1]
                if (start == a or start in soft) and (end == b or end in soft) and (start, end) != (a, b):
                    found.extend((start, end, entry) for entry in entries)

    def _automaton_matches(self, norm: str, soft: Callable[[], frozenset[int]], p: _Patterns, found: list[_Match]) -> None:
        raw = list(self._automaton.iter(_bytes_key(norm)))
        if not raw:
            return
        offsets = _char_offsets(norm, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _, _) in raw))
        wordch = p.wordch
        size = len(norm)
        for last, (length, bounded, inside) in raw:
            start, end = offsets[last + 1 - length], offsets[last + 1]
            found.extend((start, end, entry) for entry in inside)
            if bounded and (
                (start == 0 or not (wordch.match(norm, start) and wordch.match(norm, start - 1)) or start in soft())
                and (end == size or not (wordch.match(norm, end - 1) and wordch.match(norm, end)) or end in soft())
            ):
                found.extend((start, end, entry) for entry in bounded)

    def mask(self, text: str, hits: Iterable[Hit] | None = None) -> str:
        """The text with the letters of the given hits (default: the ``mask`` hits of
        ``scan(text)``) replaced by ``*``, one per letter; separators inside a span and
        everything outside the spans kept as written. The hits may come from any filter (only
        their spans are used) but must come from a scan of this same text."""
        if hits is None:
            hits = [h for h in self.scan(text) if h.action == "mask"]
        spans = sorted((max(h.start, 0), min(h.end, len(text))) for h in hits)
        out: list[str] = []
        pos = 0
        for start, end in spans:
            start = max(start, pos)
            if start >= end:
                continue
            out.append(text[pos:start])
            out.append(_mask_span(text[start:end]))
            pos = end
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)


def _maskable(ch: str) -> bool:
    """A letter or digit, or a character that normalizes to some (ﬁ, ①)."""
    if ch.isalnum():
        return True
    return not ch.isascii() and any(c.isalnum() for c in _fold(ch))


def _mask_span(segment: str) -> str:
    out = []
    after_masked = False
    for ch in segment:
        if _maskable(ch):
            out.append("*")
            after_masked = True
        elif after_masked and unicodedata.category(ch)[0] == "M":
            continue  # a mark of the masked letter: the letter and its accents are one "*"
        else:
            out.append(ch)
            after_masked = False
    return "".join(out)


EMPTY = WordFilter([])
