"""The word filter's character tables (which code points are ignorable, compatibility
characters, marks, Han or Kana, word characters of spaced scripts) and the regular expressions
of the normalization made from them: built once per process, on first use (importing the module
builds nothing). See the package's docstring for what each step does with them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from array import array
from collections.abc import Iterable
from itertools import chain, compress, repeat

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
