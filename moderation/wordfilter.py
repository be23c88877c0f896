"""The matching engine of the moderation word filter: pure Python (standard library and
``pyahocorasick``), no Django, no database, no cache. ``words.py`` builds one ``WordFilter``
per site and one for the global list and swaps them when the list changes.

Normalization
-------------
Text and entry words go through the same steps, each a C-speed operation on the whole string:

A. *Ignorable characters removed*: format characters (category Cf: zero-width space, joiners,
   word joiner, BOM, soft hyphen, bidi controls, tags...) and the other default-ignorable code
   points that render as nothing (combining grapheme joiner, variation selectors, Hangul
   fillers, Mongolian variation selectors): ``b\\u200bad`` reads ``bad``.
B. *NFKC, then* ``str.casefold()``: full-width forms become ASCII (``ＢＡＤ`` -> ``bad``),
   ligatures and compatibility characters expand (``ﬁ`` -> ``fi``, ``①`` -> ``1``), case folds
   (``ß`` -> ``ss``, ``Σ``/``ς`` -> ``σ``). The result is exactly ``unicodedata``'s NFKC, computed
   without CPython's composition pass where nothing composes (that pass is slow on CJK text).
C. *Underscores become spaces*; for a list with multi-word entries (and for entry words) every
   run of whitespace also becomes one space, so ``bad \\n\\n word`` matches ``bad word``.
D. *Separators between single letters dropped*: a run of 1 to 3 separator characters
   (whitespace, punctuation, symbols, emoji) is removed

   * between two Han, Hiragana or Katakana characters (these scripts put no spaces between
     words): ``敏 感 词``, ``敏.感.词``, ``这是敏*感*词啊`` read ``敏感词``, ``这是敏感词啊``;
   * between two single-letter tokens (a letter or digit with no letter, digit or mark right
     before or after it): ``b.a.d``, ``b a d``, ``b-a-d``, ``b_a_d``, ``b . a . d`` read
     ``bad``; a one-syllable Hangul word is such a token too (``나 쁜`` reads ``나쁜``).

   Real words are never joined: in ``grab a dog`` only ``a`` is a single letter.

An entry's word is normalized the same way (with the whitespace runs of step C), then stripped of
surrounding whitespace; a word without any letter or digit left (``...``) is unusable and skipped.

Matching and word boundaries
----------------------------
An entry with ``inside_words=False`` matches only at word boundaries of the normalized text: an
edge of the match is *not* a boundary when the match's edge character and its neighbour outside
the match are both word characters, that is letters, digits or combining marks of a script that
separates words with spaces. Han, Hiragana, Katakana, Hangul, Bopomofo, Thai, Lao, Khmer and
Myanmar never count as word characters, so ``敏感词`` matches inside ``这是敏感词啊`` while
``ass`` matches neither ``class``, ``assist`` nor ``grass``. Digits count (``bad1`` does not
match ``bad``). This is the regular-expression ``\\b`` rule with CJK-like scripts as non-word
characters; an entry whose edge is itself a separator (``.net``, ``c++``) needs no boundary on
that side. ``inside_words=True`` entries match anywhere.

One exception: where step D joined single letters across a space or a line break, the position
is a possible word boundary ("soft"), since spaced-out letters may be several words: ``a b.a.d``
and ``I said b a d`` match ``bad`` (the article is joined to the letters), and ``c l a s s``
matches ``ass`` too. Dots or dashes alone make no soft boundary: ``c.l.a.s.s`` does not.

Entries made only of word characters that need boundaries (the bulk of a list) are matched by
looking the words of the text up in a hash set; the others (CJK words, multi-word entries, words
with symbols, ``inside_words`` entries) go through one Aho-Corasick automaton, as do the words
around soft boundaries. Entries normalizing to the same key share it.

Spans and masking
-----------------
Hits carry their span in the *original* text, from the first to the last original character that
produced the match (separators and ignorable characters in between included). The span needs a
normalized->original index map, built only when there is a hit: each step records where it
changed the length of the text, and positions are mapped back through the steps. NFKC and case
folding are mapped per "chunk": a character with the marks or jamo that compose with it, or a
character that folds to several (``ß`` -> ``ss``, ``…`` -> ``...``); all the normalized
characters of a chunk map to the whole chunk (``e`` + U+0301 -> ``é``: both original
characters).

``mask`` replaces, inside the union of the given spans, every original character that is (or
normalizes to) a letter or digit by one ``*`` and drops the combining marks attached to a masked
character (a letter with its accents becomes one ``*``); separators, symbols, emoji, spaces and
ignorable characters inside a span are kept, and everything outside the spans is returned exactly
as written: ``b.a.d`` -> ``*.*.*``, ``ＢＡＤ`` -> ``***``, ``Straße`` (entry ``strasse``) ->
``******``. The text keeps its length in characters unless a masked span holds combining marks.

Performance: with no hit (the common case) a scan is a few whole-string passes (ignorable and
compatibility characters, NFKC quick check, case folding, the CJK joining, the word split), a
set intersection and one automaton pass; the index map is built only when something matched.
The character tables are built once per process, on first use.
"""

from __future__ import annotations

import bisect
import functools
import operator
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
    (0x3021, 0x302F),  # Hangzhou numerals, ideographic tone marks
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

# Han, Hiragana, Katakana: separators between two of them are dropped (step D).
_CJK_JOIN_RANGES = (
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3031, 0x3035),
    (0x3038, 0x303C),
    (0x3041, 0x3096),  # Hiragana
    (0x3099, 0x309F),  # with the combining voiced sound marks
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

# Astral code points get coarse ranges: the regex engine tests a BMP character against a class
# with a bitmap, then against each astral range of the class, one by one. Letters, digits and
# marks of the supplementary multilingual plane up to U+1EFFF (historic and minority scripts)
# count as word material; U+1F000-U+1FFFF (emoji, symbols) are separators.
_ASTRAL_NONSEP = ((0x10000, 0x1EFFF),)  # with \w, which covers the ideographic planes
_ASTRAL_WORD = ((0x10000, 0x16FDF), (0x17000, 0x1AFFF), (0x1B170, 0x1EFFF))
_ASTRAL_COMPAT = ((0x2F800, 0x2FA1F),)  # CJK compatibility ideographs supplement (not categorized)
# Letters for step D that are neither word characters nor Han/Kana: their presence means step D
# may join single letters that the word split does not see (Hangul, Thai... and a few enclosed
# digits NFKC leaves alone).
_ASTRAL_ODD_LETTERS = ((0x1F100, 0x1F10C), (0x1FBF0, 0x1FBF9))

_CLASS_SPECIAL = frozenset("\\[]^-&~|")
_FIRST_GROUP = operator.itemgetter(1)
_BMP_END = 0x10000


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


def _coarse_astral(ranges: Iterable[tuple[int, int]], gap: int = 64) -> list[tuple[int, int]]:
    """The ranges, the astral ones less than ``gap`` apart merged."""
    ranges = list(ranges)
    out = [r for r in ranges if r[1] < _BMP_END]
    for lo, hi in sorted(r for r in ranges if r[1] >= _BMP_END):
        if out and out[-1][1] >= _BMP_END and lo - out[-1][1] <= gap:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


# The code points categorized when the tables are built: all but surrogates and the planes above
# the supplementary multilingual one (no marks or format characters there but in plane 14, which
# is ignorable as a whole).
_CATEGORIZED = ((0x0000, 0xD7FF), (0xE000, 0x1FFFF))
_MARK, _FORMAT, _LETTER = 1, 2, 3  # _LETTER: letters and digits
_CATEGORY_CODES = {"Mn": _MARK, "Mc": _MARK, "Me": _MARK, "Cf": _FORMAT}
_CATEGORY_CODES.update(dict.fromkeys(("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"), _LETTER))


def _categorized_chars() -> str:
    """Every categorized code point, in order, as one string."""
    return array("I", chain.from_iterable(range(lo, hi + 1) for lo, hi in _CATEGORIZED)).tobytes().decode("utf-32-le")


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
    """The regular expressions of the normalization: with the astral parts of the classes for
    texts with astral characters, without for the others (cheaper, see _ASTRAL_NONSEP)."""

    def __init__(self, classes: dict[str, list[tuple[int, int]]], astral: bool):
        def cls(name: str) -> str:
            ranges = classes[name]
            if not astral:
                ranges = [(lo, min(hi, _BMP_END - 1)) for lo, hi in ranges if lo < _BMP_END]
            return _class(ranges)

        # Letters, digits and marks; separators are everything else. (\w is letters, digits and
        # "_", which step C turns into a space.)
        nonsep = "\\w" + cls("marks")
        S, W, C = f"[^{nonsep}]", f"[{nonsep}]", f"[{cls('cjk')}]"

        # Steps A and B: the characters to remove or to replace by their NFKC form.
        self.special = re.compile(f"[{cls('ignorable')}{cls('compat')}]")
        # Step D: the letters of the scripts it joins but the word split does not see.
        self.single = re.compile(f"[{cls('single')}]")
        self.ignorable = re.compile(f"[{cls('ignorable')}]+")
        # Step B, index map only: the characters that compose with the one before them (chunks:
        # a character with those, or a character that folds to several, with those).
        self.attach = re.compile(f"[{cls('attach')}]+")
        self.astral = astral
        # Step D: separators between two Han/Kana characters (two forms: the first tries only
        # the positions of separators, the second those of Han/Kana), ...
        self.cjk_join = re.compile(f"{S}(?<={C}.){S}{{0,2}}(?={C})", re.DOTALL)
        self.cjk_pairs = re.compile(f"({C}){S}{{1,3}}(?={C})")
        # ... and between two single-letter tokens. (Both matches start with a separator and
        # look behind it: the regex engine tries only the positions holding one.)
        self.single_join = re.compile(f"{S}(?<!{W}..)(?<={W}.)(?<!{C}.){S}{{0,2}}(?!{C})(?={W}(?!{W}))", re.DOTALL)
        # The words of spaced scripts (letters, digits, marks: the boundary rule's word characters).
        self.word = re.compile(f"[{cls('word')}]+")
        self.wordch = re.compile(f"[{cls('word')}]")

    @functools.cached_property
    def chunk(self) -> re.Pattern[str]:
        ranges = _tables().expanders
        if not self.astral:
            ranges = [(lo, min(hi, _BMP_END - 1)) for lo, hi in ranges if lo < _BMP_END]
        return re.compile(f"[{_class(ranges)}]{self.attach.pattern[:-1]}*")


class _Tables:
    """The character tables and patterns, built once per process on first use (importing the
    module builds nothing)."""

    def __init__(self) -> None:
        chars = _categorized_chars()
        codes = bytearray(map(_CATEGORY_CODES.get, map(unicodedata.category, chars), repeat(0)))
        marks = _code_ranges(codes, b"\x01+")
        formats = _code_ranges(codes, b"\x02+")
        letters = _code_ranges(codes, b"[\x01\x03]+")  # letters, digits, marks
        offset = 0
        for first, last in _CATEGORIZED:  # letters of spaced scripts only from here on
            for lo, hi in _NOSPACE_RANGES:
                lo, hi = max(lo, first), min(hi, last)
                if lo <= hi:
                    codes[offset + lo - first : offset + hi - first + 1] = bytes(hi + 1 - lo)
            offset += last - first + 1
        spaced = [r for r in _code_ranges(codes, b"[\x01\x03]+") if r[0] < _BMP_END]
        decomposable = compress(chars, map(unicodedata.decomposition, chars))
        compat = _expand((cp, cp) for cp in map(ord, decomposable) if unicodedata.normalize("NFKC", chr(cp)) != chr(cp))

        # Astral format characters other than tags are controls of historic scripts: no range.
        ignorable = {cp for cp in _expand([*formats, *_EXTRA_IGNORABLE]) if cp < _BMP_END or cp >= 0xE0000}
        single = (_expand(_NOSPACE_RANGES) & _expand(letters)) - _expand(_CJK_JOIN_RANGES) - compat - ignorable
        self.ignorable_chars = frozenset(map(chr, ignorable))
        # The high bytes of the UTF-16 code units of those letters: a quick test before the
        # regex that finds them.
        high = {cp >> 8 for cp in single if cp < _BMP_END}
        self.single_high_bytes = bytes(int(i in high) for i in range(256))
        self._compat = compat
        self._classes = {
            "ignorable": _ranges(ignorable),
            "compat": _coarse_astral([*_ranges(compat), *_ASTRAL_COMPAT]),
            "single": [*_ranges(cp for cp in single if cp < _BMP_END), *_ASTRAL_ODD_LETTERS],
            "attach": _coarse_astral(_ranges(_expand([*marks, *_EXTRA_ATTACH]) - ignorable)),
            "marks": _coarse_astral([*marks, *_ASTRAL_NONSEP]),
            "cjk": list(_CJK_JOIN_RANGES),
            "word": [*spaced, *_ASTRAL_WORD],
        }
        self.bmp = _Patterns(self._classes, astral=False)
        # Astral characters the BMP patterns classify as the full ones do: no letter, digit or
        # mark, in no astral range of a class (emoji and most symbols).
        astral = [r for ranges in self._classes.values() for r in ranges if r[1] >= _BMP_END]
        self._astral = re.compile("[\U00010000-\U0010ffff]")
        self._astral_special = re.compile(f"[\\w{_class(astral)}]")

    @functools.cached_property
    def full(self) -> _Patterns:
        return _Patterns(self._classes, astral=True)

    @functools.cached_property
    def expanders(self) -> list[tuple[int, int]]:
        """The characters NFKC and case folding turn into more than one (``ß``, ``…``, ``ﬁ``),
        for the index map only (built on its first use)."""
        chars = _categorized_chars()
        expanding = {ord(c) for c, folded in zip(chars, map(str.casefold, chars), strict=True) if len(folded) != 1}
        expanding.update(cp for cp in self._compat if len(unicodedata.normalize("NFKC", chr(cp)).casefold()) != 1)
        return _coarse_astral([*_ranges(expanding), *_ASTRAL_COMPAT, *self._classes["attach"]], 4096)

    def patterns(self, text: str) -> _Patterns:
        """The patterns for this text (and anything normalized from it): those without astral
        ranges unless the text has astral characters they would classify differently."""
        if text.isascii() or len(text.encode("utf-16-le", "surrogatepass")) == 2 * len(text):
            return self.bmp
        for ch in set(self._astral.findall(text)):
            if self._astral_special.match(ch):
                return self.full
        return self.bmp


@functools.cache
def _tables() -> _Tables:
    return _Tables()


# --- normalization -------------------------------------------------------------------------


def _clean(s: str, p: _Patterns) -> tuple[str, str]:
    """Steps A and B but case folding: the text without ignorable characters, then its NFKC.

    CPython's NFKC is slow when the text is not NFKC already (its composition pass walks every
    character of CJK or Thai text in Python-visible time), which a Chinese comment with
    full-width punctuation never is. So the compatibility characters found are replaced by their
    NFKC form, which keeps the text's NFKD, hence its NFKC: if the result passes the quick check,
    it is the text's NFKC. Otherwise NFKD then NFC, which is NFKC by definition and quick when
    nothing composes."""
    found = set(p.special.findall(s))
    if not found:
        return s, (s if unicodedata.is_normalized("NFKC", s) else unicodedata.normalize("NFKC", s))
    removed = found & _tables().ignorable_chars
    if removed:
        if len(removed) <= 8:
            for ch in removed:
                s = s.replace(ch, "")
        else:
            s = p.ignorable.sub("", s)
    if unicodedata.is_normalized("NFKC", s):
        return s, s
    compat = found - removed
    if len(compat) <= 16:
        out = s
        for ch in compat:
            out = out.replace(ch, unicodedata.normalize("NFKC", ch))
        if unicodedata.is_normalized("NFKC", out):
            return s, out
    return s, unicodedata.normalize("NFC", unicodedata.normalize("NFKD", s))


def _cjk_joined(s: str, p: _Patterns) -> str:
    """Step D, first part. In a text with spaces (not mostly CJK), trying the positions of the
    Han/Kana characters is cheaper; in CJK text, those of the separators."""
    if s.count(" ") * 16 > len(s):
        return p.cjk_pairs.sub(_FIRST_GROUP, s)
    return p.cjk_join.sub("", s)


def _has_single_letters(s: str, p: _Patterns) -> bool:
    """Whether s (not ASCII, normalized) has letters of the scripts step D joins but the word
    split does not see (Hangul, Thai...): their UTF-16 high bytes first (a few C-speed passes),
    then the regex if those say maybe."""
    if not p.astral:
        high = s.encode("utf-16-le", "surrogatepass")[1::2]
        if b"\x01" not in high.translate(_tables().single_high_bytes):
            return False
    return p.single.search(s) is not None


def _fold(s: str, p: _Patterns | None = None) -> str:
    """Steps A and B: ignorable characters removed, NFKC, case folding."""
    if s.isascii():
        return s.lower()
    return _clean(s, p or _tables().patterns(s))[1].casefold()


_ASCII_SEPARATORS = str.maketrans({c: " " for c in range(128) if not chr(c).isalnum()})
# UTF-8 bytes to spaces but ASCII letters and digits; the bytes of UTF-8 sequences of no word
# character but ASCII ones: ASCII, continuation bytes, the leads of U+3000-U+9FFF (CJK; U+302A-
# U+302F are in _NOSPACE_RANGES), of U+B000-U+D7FF (Hangul), U+E000-U+EFFF (private use) and,
# with the patterns without astral ranges, of astral characters (those patterns are used only
# when the text's astral characters are no word characters: emoji).
_UTF8_SEPARATORS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
_UTF8_WORDLESS = bytes([*range(0xC0), *range(0xE3, 0xEA), 0xEB, 0xEC, 0xED, 0xEE])
_UTF8_WORDLESS_OR_ASTRAL = _UTF8_WORDLESS + bytes(range(0xF0, 0xF5))


def _words(s: str, p: _Patterns) -> list[str] | list[bytes]:
    """The words of spaced scripts in s (maximal runs of word characters), in order: as str,
    or as the UTF-8 bytes of ASCII words when s has no word characters beyond ASCII (split at
    C speed, a third of the regex's time)."""
    if s.isascii():
        return s.translate(_ASCII_SEPARATORS).split()
    data = s.encode("utf-8", "surrogatepass")
    if not data.translate(None, _UTF8_WORDLESS if p.astral else _UTF8_WORDLESS_OR_ASTRAL):
        return data.translate(_UTF8_SEPARATORS).split()
    return p.word.findall(s)


@dataclass(slots=True)
class _Normalized:
    """A text through the normalization steps: after A (``a``), B (``b``), C (``c``), the first
    part of D (``mid``: CJK) and the second (``text``: single letters, the final result),
    whether that second part ran, the words of ``text`` if known (see ``_words``)."""

    a: str
    b: str
    c: str
    mid: str
    text: str
    singles: bool
    words: list[str] | list[bytes] | None = None


def _normalize(text: str, p: _Patterns, collapse: bool) -> _Normalized:
    if text.isascii():
        a, b, single = text, text.lower(), False
    else:
        a, b = _clean(text, p)
        b = b.casefold()
        single = _has_single_letters(b, p)
    c = b.replace("_", " ")
    if collapse:
        c = " ".join(c.split())
    mid = c if c.isascii() else _cjk_joined(c, p)
    words = _words(mid, p)
    # Joining single letters needs two one-letter words in a row (most texts have none), or
    # letters of the scripts the word split leaves out.
    if single:
        return _Normalized(a, b, c, mid, p.single_join.sub("", mid), True)
    try:
        singles = b"\x01\x01" in bytes(map(len, words))
    except ValueError:  # a word of 256 characters or more
        singles = b"\x01\x01" in bytes(min(len(word), 2) for word in words)
    if singles:
        return _Normalized(a, b, c, mid, p.single_join.sub("", mid), True)
    return _Normalized(a, b, c, mid, mid, False, words)


def _soft(mid: str, post: str, p: _Patterns) -> frozenset[int]:
    """The soft word boundaries of ``post`` (``mid`` after joining single letters): where a
    space or a line break between two letters of spaced scripts was removed."""
    if len(mid) == len(post) or (mid.count(" ") == post.count(" ") and mid.count("\n") == post.count("\n")):
        return frozenset()
    soft = []
    removed = 0
    for m in p.single_join.finditer(mid):
        a, b = m.span()
        sep = m.group()
        if (" " in sep or "\n" in sep) and p.wordch.match(mid, a - 1) and p.wordch.match(mid, b):
            soft.append(a - removed)
        removed += b - a
    return frozenset(soft)


def normalize_text(text: str) -> str:
    """The text as the filter reads it (steps A-D of the module docstring, whitespace runs
    included)."""
    return _normalize(text, _tables().patterns(text), True).text


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


# --- the filter ----------------------------------------------------------------------------

_Match = tuple[int, int, Entry]


def _bytes_key(s: str) -> str:
    """The UTF-8 bytes of s as a str of code points < 256: the automatons work on those.
    (pyahocorasick finds a node's child by a linear search: a root with thousands of CJK
    children makes every step cost a microsecond; over UTF-8 bytes a node has < 256.)"""
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
    """The compiled form of a word list. Immutable once built (but for a cache built on first
    use); safe to share between threads."""

    __slots__ = ("_count", "_words", "_word_keys", "_ascii_word_keys", "_word_automaton", "_automaton", "_collapse")

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
        self._ascii_word_keys = frozenset(key.encode("ascii") for key in words if key.isascii())
        self._word_automaton = None  # built on first use: only words around soft boundaries need it
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
        norm = _normalize(text, p, self._collapse)
        found = self._matches(norm, p)
        if not found:
            return []
        mapped, steps = _mapped(text, norm, p, self._collapse)
        if mapped is not norm:  # a composition across chunks the index map cannot follow
            found = self._matches(mapped, p)  # (rare): match what the map describes exactly
        hits = []
        for start, end, entry in found:
            a, b = _back(steps, start, end)
            hits.append(Hit(entry_id=entry.id, word=entry.word, action=entry.action, start=a, end=b))
        hits.sort(key=lambda h: (h.start, h.end, h.entry_id))
        return hits

    def _matches(self, norm: _Normalized, p: _Patterns) -> list[_Match]:
        """The matches in the normalized text."""
        text = norm.text
        found: list[_Match] = []
        soft_cache: list[frozenset[int]] = []

        def soft() -> frozenset[int]:
            if not soft_cache:
                soft_cache.append(_soft(norm.mid, text, p))
            return soft_cache[0]

        if self._words:
            words = _words(text, p) if norm.words is None else norm.words
            keys: Iterable[str]
            if words and isinstance(words[0], bytes):
                keys = [key.decode("ascii") for key in self._ascii_word_keys.intersection(words)]
            else:
                keys = self._word_keys.intersection(words)
            for key in keys:
                self._whole_words(text, key, p, found)
            if len(norm.mid) != len(text) and soft():
                self._soft_words(text, soft(), p, found)
        if self._automaton is not None:
            self._automaton_matches(text, soft, p, found)
        return found

    def _whole_words(self, text: str, key: str, p: _Patterns, found: list[_Match]) -> None:
        """Every occurrence of a key made of word characters that is a whole word of the text."""
        entries = self._words[key]
        size = len(key)
        i = text.find(key)
        while i >= 0:
            end = i + size
            if (i == 0 or not p.wordch.match(text, i - 1)) and not p.wordch.match(text, end):
                found.extend((i, end, entry) for entry in entries)
            i = text.find(key, i + 1)

    def _soft_words(self, text: str, soft: frozenset[int], p: _Patterns, found: list[_Match]) -> None:
        """The word keys matching a part of a word that starts or ends at a soft boundary."""
        for m in p.word.finditer(text):
            a, b = m.span()
            if not any(a < q < b for q in soft):
                continue
            word = m.group()
            if self._word_automaton is None:
                self._word_automaton = _automaton(
                    (key, (len(_bytes_key(key)), found)) for key, found in self._words.items()
                )
            assert self._word_automaton is not None  # made of self._words, which has words
            raw = list(self._word_automaton.iter(_bytes_key(word)))
            offsets = _char_offsets(word, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _) in raw))
            for last, (size, entries) in raw:
                start, end = a + offsets[last + 1 - size], a + offsets[last + 1]
                if (start == a or start in soft) and (end == b or end in soft) and (start, end) != (a, b):
                    found.extend((start, end, entry) for entry in entries)

    def _automaton_matches(
        self, text: str, soft: Callable[[], frozenset[int]], p: _Patterns, found: list[_Match]
    ) -> None:
        assert self._automaton is not None  # the caller checked
        raw = list(self._automaton.iter(_bytes_key(text)))
        if not raw:
            return
        offsets = _char_offsets(text, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _, _) in raw))
        wordch = p.wordch
        size = len(text)
        for last, (length, bounded, inside) in raw:
            start, end = offsets[last + 1 - length], offsets[last + 1]
            found.extend((start, end, entry) for entry in inside)
            if bounded and (
                (start == 0 or not (wordch.match(text, start) and wordch.match(text, start - 1)) or start in soft())
                and (end == size or not (wordch.match(text, end - 1) and wordch.match(text, end)) or end in soft())
            ):
                found.extend((start, end, entry) for entry in bounded)

    def mask(self, text: str, hits: Iterable[Hit] | None = None) -> str:
        """The text with the letters of the given hits (default: the ``mask`` hits of
        ``scan(text)``) replaced by ``*``, one per letter; separators inside a span and
        everything outside the spans kept as written. The hits may come from any filter (only
        their spans are used) but must come from a scan of this same text."""
        if hits is None:
            hits = [h for h in self.scan(text) if h.action == "mask"]
        spans: list[list[int]] = []  # the union of the spans, overlapping or touching ones merged
        for start, end in sorted((max(h.start, 0), min(h.end, len(text))) for h in hits):
            if start >= end:
                continue
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for start, end in spans:
            out.append(text[pos:start])
            out.append(_mask_span(text[start:end]))
            pos = end
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
