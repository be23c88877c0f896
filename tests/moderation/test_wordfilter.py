"""The word filter's matching engine (the ``moderation/wordfilter/`` package): normalization
against trivial evasion, word boundaries and the false positives they prevent, spans in the
original text, masking, and properties over arbitrary text. No database, no cache."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from moderation.wordfilter import (
    ACTIONS,
    EMPTY,
    Entry,
    Hit,
    WordFilter,
    chars,
    indexmap,
    normalize,
    normalize_text,
    normalize_word,
)


def wf(*words: str, action: str = "mask", inside_words: bool = False) -> WordFilter:
    return WordFilter(Entry(id=i, word=w, action=action, inside_words=inside_words) for i, w in enumerate(words, 1))


def found(f: WordFilter, text: str) -> list[tuple[str, str]]:
    """(entry word, the original text the hit covers) of every hit, in order."""
    return [(h.word, text[h.start : h.end]) for h in f.scan(text)]


BAD = wf("bad")
SENSITIVE = wf("敏感词")


# --- normalization -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["ＢＡＤ", "ｂａｄ", "Ｂ．Ａ．Ｄ", "so ＢａＤ！"])
def test_full_width_letters_and_punctuation_read_as_ascii(text):
    assert [w for w, _ in found(BAD, text)] == ["bad"]


@pytest.mark.parametrize("text", ["BAD", "Bad", "bAd"])
def test_case_does_not_matter(text):
    assert found(BAD, text) == [("bad", text)]


def test_case_folding_expands_sharp_s_both_ways():
    assert found(wf("strasse"), "die Straße hier") == [("strasse", "Straße")]
    assert found(wf("straße"), "DIE STRASSE") == [("straße", "STRASSE")]
    assert found(wf("ΣΟΦΟΣ"), "σοφος") == [("ΣΟΦΟΣ", "σοφος")]  # final sigma folds to sigma


def test_compatibility_characters_are_folded():
    assert found(wf("fine"), "a ﬁne day") == [("fine", "ﬁne")]  # the ligature is one character
    assert found(wf("bad1"), "ｂａｄ①") == [("bad1", "ｂａｄ①")]
    assert found(wf("kg"), "5 ㎏") == [("kg", "㎏")]


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e", "\u2066", "\U000e0041", "\ufe0f", "\u034f"],
    ids=["zwsp", "zwnj", "zwj", "word-joiner", "bom", "soft-hyphen", "rlo", "lri", "tag", "vs16", "cgj"],
)
def test_an_invisible_character_inside_a_word_is_ignored(invisible):
    text = f"so b{invisible}ad!"
    assert found(BAD, text) == [("bad", f"b{invisible}ad")]


@pytest.mark.parametrize(
    "spelling", ["b.a.d", "b a d", "b-a-d", "b_a_d", "b . a . d", "b*a*d", "b\na\nd", "b/a/d", "b😀a😀d", "B.A.D."]
)
def test_separators_between_single_letters_are_ignored(spelling):
    text = f"you are {spelling} today"
    assert [w for w, _ in found(BAD, text)] == ["bad"]
    assert found(BAD, text)[0][1].rstrip(".") == spelling.rstrip(".")


@pytest.mark.parametrize(
    "text", ["敏 感 词", "敏.感.词", "敏＊感＊词", "敏　感　词", "这是敏*感*词啊", "敏\u200b感词", "敏-感 词"]
)
def test_separators_between_cjk_characters_are_ignored(text):
    assert [w for w, _ in found(SENSITIVE, text)] == ["敏感词"]


def test_evasions_combine():
    assert [w for w, _ in found(BAD, "Ｂ．\u200bａ．Ｄ")] == ["bad"]
    assert [w for w, _ in found(BAD, "b\u00ad.Ａ.\u200bD")] == ["bad"]


def test_an_article_before_spaced_letters_does_not_hide_them():
    # Step D joins "a" with the letters ("abad"); where it joined across a space, a word may
    # start or end.
    assert found(BAD, "you are a b.a.d boy") == [("bad", "b.a.d")]
    assert found(BAD, "I said b a d") == [("bad", "b a d")]


def test_normalize_word_is_the_text_normalization_trimmed():
    assert normalize_word("  ＳＰＡＭ ") == "spam"
    assert normalize_word("b.a.d") == "bad"
    assert normalize_word("Bad  Word") == "bad word"
    assert normalize_word("敏 感 词") == "敏感词"
    assert normalize_word("c++") == "c++"
    assert normalize_text("Straße\u200b") == "strasse"


@pytest.mark.parametrize("word", ["", "   ", "...", "!!!", "\u200b", "😀"])
def test_an_entry_that_normalizes_to_nothing_is_skipped(word):
    assert normalize_word(word) == ""
    f = WordFilter([Entry(1, word, "block"), Entry(2, "bad", "block")])
    assert len(f) == 1
    assert found(f, f"{word} bad {word}") == [("bad", "bad")]


# --- false positives -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["class", "assist", "grass", "a classic assessment", "passage", "Assassin's creed"])
def test_a_word_inside_a_longer_word_does_not_match(text):
    assert found(wf("ass"), text) == []


def test_the_scunthorpe_problem_is_avoided():
    assert found(wf("cunt"), "Scunthorpe United") == []
    assert found(wf("hell"), "hello shell Hellenic") == []
    assert found(wf("tit"), "title constitution") == []


def test_real_words_are_not_joined_across_spaces():
    for inside_words in (False, True):
        f = wf("bad", inside_words=inside_words)
        assert found(f, "grab a dog") == []
        assert found(f, "gra b a dog") == []  # "b a" joins to "ba", "dog" stays a word
    assert normalize_text("grab a dog") == "grab a dog"


def test_joined_single_letters_never_reach_into_longer_words():
    assert normalize_text("x a b dog") == "xab dog"
    assert found(wf("bdog", inside_words=True), "x a b dog") == []
    assert found(wf("abdog", inside_words=True), "a b dog") == []
    assert found(BAD, "ba d") == [] and found(BAD, "b ad") == []


def test_digits_count_as_word_characters():
    assert found(BAD, "bad1 2bad bad_2") == [("bad", "bad")]  # "_" is a separator


def test_dots_alone_make_no_word_boundary_inside_spelled_out_letters():
    assert found(wf("ass"), "c.l.a.s.s") == []
    assert found(wf("ass"), "c l a s s") == [("ass", "a s s")]  # spaces: maybe separate words


def test_punctuation_and_emoji_are_word_boundaries():
    assert found(BAD, "(bad)") == [("bad", "bad")]
    assert found(BAD, "😀bad😀") == [("bad", "bad")]
    assert found(BAD, "«bad»") == [("bad", "bad")]


# --- inside words, CJK ---------------------------------------------------------------------


def test_an_inside_words_entry_matches_inside_longer_words():
    assert found(wf("hell", inside_words=True), "Say hello") == [("hell", "hell")]
    assert found(wf("ass", inside_words=True), "class") == [("ass", "ass")]


def test_cjk_words_match_without_spaces_around_them():
    assert found(SENSITIVE, "这是敏感词啊") == [("敏感词", "敏感词")]
    assert found(SENSITIVE, "abc敏感词def") == [("敏感词", "敏感词")]
    assert found(wf("ass"), "敏ass感") == [("ass", "ass")]  # Han is no word character
    assert found(wf("バカ"), "お前はバカだ") == [("バカ", "バカ")]
    assert found(wf("나쁜"), "나쁜놈") == [("나쁜", "나쁜")]


def test_half_width_katakana_composes_like_full_width():
    assert found(wf("ガキ"), "ｶﾞｷ") == [("ガキ", "ｶﾞｷ")]


# --- several entries -----------------------------------------------------------------------


def test_overlapping_entries_are_all_reported():
    entries = [Entry(1, "bad", "mask"), Entry(2, "badword", "block"), Entry(3, "word", "review")]
    assert found(WordFilter(entries), "badword") == [("badword", "badword")]  # boundaries decide
    inside = [Entry(e.id, e.word, e.action, inside_words=True) for e in entries]
    assert found(WordFilter(inside), "badword") == [("bad", "bad"), ("badword", "badword"), ("word", "word")]


def test_hits_come_in_text_order_with_their_entry():
    f = WordFilter([Entry(7, "spam", "block"), Entry(8, "scam", "review"), Entry(9, "敏感词", "mask")])
    text = "scam, 敏感词 and SPAM"
    assert f.scan(text) == [
        Hit(entry_id=8, word="scam", action="review", start=0, end=4),
        Hit(entry_id=9, word="敏感词", action="mask", start=6, end=9),
        Hit(entry_id=7, word="spam", action="block", start=14, end=18),
    ]


def test_entries_spelled_differently_share_a_key_and_all_hit():
    f = WordFilter([Entry(1, "bad", "mask"), Entry(2, "ＢＡＤ", "block"), Entry(3, "bad", "review", inside_words=True)])
    assert len(f) == 3
    assert sorted(h.entry_id for h in f.scan("so bad")) == [1, 2, 3]
    assert [h.entry_id for h in f.scan("badge")] == [3]


def test_a_multi_word_entry_matches_across_any_whitespace():
    f = wf("bad word")
    assert found(f, "a bad\n\n  word") == [("bad word", "bad\n\n  word")]
    assert found(f, "bad_word") == [("bad word", "bad_word")]
    assert found(f, "badword") == []


def test_an_entry_with_symbols_matches_them_literally():
    assert found(wf("f*ck"), "what the F*CK") == [("f*ck", "F*CK")]
    assert found(wf("c++"), "I like C++ and c+") == [("c++", "C++")]


# --- edge cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\t ", "\u200b\u200b", "...", "😀"])
def test_empty_or_blank_text_has_no_hits(text):
    assert BAD.scan(text) == []
    assert BAD.mask(text) == text


def test_the_empty_filter_finds_nothing():
    assert len(EMPTY) == 0
    assert EMPTY.scan("bad 敏感词") == []
    assert EMPTY.mask("bad", [Hit(1, "bad", "mask", 0, 3)]) == "***"  # masks the given spans


def test_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="unknown action"):
        WordFilter([Entry(1, "bad", "ban")])
    assert ACTIONS == ("block", "review", "mask")


def test_lone_surrogates_and_control_characters_do_not_break_a_scan():
    text = "x\ud800 bad \x00\x1f\udfff敏感词"
    assert [w for w, _ in found(wf("bad", "敏感词"), text)] == ["bad", "敏感词"]


# --- masking -------------------------------------------------------------------------------


def test_mask_keeps_everything_outside_the_match_as_written():
    f = wf("darn", "敏感词")
    assert f.mask("Well DARN it, **café** ☕") == "Well **** it, **café** ☕"
    text = "e\u0301t\u00e9 👨‍👩‍👧 DARN 敏感词! Ａ "
    assert f.mask(text) == "e\u0301t\u00e9 👨‍👩‍👧 **** ***! Ａ "


def test_mask_stars_each_letter_of_an_evasive_spelling_and_keeps_its_separators():
    assert BAD.mask("so b.a.d!") == "so *.*.*!"
    assert BAD.mask("Ｂ．Ａ．Ｄ") == "*．*．*"
    assert BAD.mask("b\u200bad") == "*\u200b**"  # the zero-width space stays, invisible
    assert BAD.mask("b a d") == "* * *"
    assert SENSITIVE.mask("这是敏 感 词啊") == "这是* * *啊"


def test_mask_stars_each_original_character_of_an_expansion():
    assert wf("strasse").mask("Straße!") == "******!"
    assert wf("fine").mask("ﬁne") == "***"  # the ligature is one character: one star


def test_mask_makes_a_letter_and_its_accents_one_star():
    decomposed = "cafe\u0301 ok"
    assert wf("café").mask(decomposed) == "**** ok"
    assert wf("bạ́d").mask("so ba\u0301\u0323d!") == "so ***!"  # marks in any order


def test_mask_defaults_to_the_hits_of_mask_entries_only():
    f = WordFilter([Entry(1, "darn", "mask"), Entry(2, "scam", "block"), Entry(3, "crypto", "review")])
    assert f.mask("darn scam crypto") == "**** scam crypto"


def test_mask_accepts_the_hits_of_another_filter():
    site = WordFilter([Entry(5, "敏感词", "mask")])
    hits = site.scan("这是敏感词")
    assert EMPTY.mask("这是敏感词", hits) == "这是***"


def test_mask_merges_overlapping_hits():
    f = WordFilter([Entry(1, "bad", "mask", True), Entry(2, "dword", "mask", True)])
    assert f.mask("xbadwordx") == "x*******x"


def test_mask_without_hits_returns_the_text_unchanged():
    text = "nothing here"
    assert BAD.mask(text) is text
    assert BAD.mask(text, []) is text


# --- properties ----------------------------------------------------------------------------

PROPERTY = hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text from the scripts and characters that matter here: ASCII, accents and combining marks,
# full-width forms, ligatures, CJK and kana, Hangul and its jamo, Thai, zero-width and format
# characters, emoji, math letters; and any other character now and then (lone surrogates are
# in the explicit examples).
ALPHABET = st.one_of(
    st.sampled_from(list("abcdsBAD .-_*!\n\t'")),
    st.sampled_from(list("éÉßẞﬁﬀǅİıΣσςЖжÅ①⑩㎏™…\u00a0\u3000")),
    st.sampled_from(list("\u0301\u0323\u0308\u0337\u3099\u309a\u0e33\u0e48\u0e38\u093f\u094d")),
    st.sampled_from(list("ＢＡＤｂａｄ．！＿ｶﾞﾟｱ")),
    st.sampled_from(list("敏感词这是啊バカが。，가나다ㄱㅏ각한กขฃ")),
    st.sampled_from(list("\u200b\u200d\u00ad\ufeff\u202e\U000e0041\ufe0f😀👍🏽\U0001d41b\U0001d41a")),
    st.characters(),
)
TEXT = st.text(ALPHABET, max_size=60)
FILTER = wf("bad", "ss", "敏感词", "ガ", "가", "a b", "é", "fi", "1")
INSIDE = wf("bad", "ss", "敏感词", "ガ", "가", "d", "é", "fi", "1", inside_words=True)


@PROPERTY
@given(TEXT)
@example("x\ud800b.a.d")
@example("ｶﾞ\u0301ß\u200b")
def test_scanning_arbitrary_text_never_raises_and_gives_valid_spans(text):
    for f in (FILTER, INSIDE):
        hits = f.scan(text)
        assert all(0 <= h.start < h.end <= len(text) for h in hits)
        assert hits == sorted(hits, key=lambda h: (h.start, h.end, h.entry_id))


@PROPERTY
@given(TEXT)
def test_mask_changes_only_the_letters_inside_the_hit_spans(text):
    """What mask guarantees: outside the spans the text is unchanged; inside, each character
    is kept, replaced by one "*" (a letter or digit, or what normalizes to one), or dropped (a
    combining mark right after a starred character). So the length in characters is unchanged
    unless a span holds such marks."""
    hits = INSIDE.scan(text)
    masked = INSIDE.mask(text, hits)
    covered = [False] * len(text)
    for h in hits:
        covered[h.start : h.end] = [True] * (h.end - h.start)
    out = iter(masked)
    dropped = 0
    starred = False
    for ch, inside in zip(text, covered, strict=True):
        if not inside:
            assert next(out) == ch
            starred = False
        elif starred and unicodedata.category(ch)[0] == "M":
            dropped += 1  # no output
        else:
            got = next(out)
            assert got == ch or got == "*"
            starred = got == "*" and ch != "*"
    assert next(out, None) is None
    assert len(masked) == len(text) - dropped


@PROPERTY
@given(TEXT)
def test_the_fast_nfkc_is_nfkc(text):
    p = chars._tables().patterns(text)
    without, nfkc = normalize._clean(text, p)
    assert without == "".join(ch for ch in text if ch not in chars._tables().ignorable_chars)
    assert nfkc == unicodedata.normalize("NFKC", without)


@PROPERTY
@given(TEXT)
def test_the_index_map_is_monotonic_and_inside_the_text(text):
    p = chars._tables().patterns(text)
    norm = normalize._normalize(text, p, True)
    mapped, steps = indexmap._mapped(text, norm, p, True)
    last = (0, 0)
    for i in range(len(mapped.text)):
        a, b = indexmap._back(steps, i, i + 1)
        assert 0 <= a < b <= len(text)
        assert a >= last[0] and b >= last[1]
        last = (a, b)


def _spelled(word: str, draw) -> str:
    """An evasive spelling of a lower-case ASCII word."""
    letters = []
    for ch in word:
        form = draw(st.sampled_from(["plain", "upper", "wide", "wide-upper"]))
        if "upper" in form:
            ch = ch.upper()
        if "wide" in form:
            ch = chr(ord(ch) + 0xFEE0)
        letters.append(ch + draw(st.sampled_from(["", "", "\u200b", "\u00ad", "\u2060"])))
    separator = draw(st.sampled_from(["", "", ".", " ", "-", "_", " . ", "*", "．", "😀"]))
    return separator.join(letters)


@PROPERTY
@given(st.data())
def test_an_evasive_spelling_is_found_with_its_exact_span(data):
    word = data.draw(st.text("bcdfgkmpqvwxz", min_size=2, max_size=8))  # no vowel: no accidental words
    spelling = _spelled(word, data.draw)
    before = data.draw(st.sampled_from(["", "Hello, ", "the ", "敏感词 ", "ok\n", "😀 ", "é "]))
    after = data.draw(st.sampled_from(["", " there", "!", " 这", ".\n", " 😀", " è"]))
    text = before + spelling + after
    f = WordFilter([Entry(1, word, "mask")])
    hits = f.scan(text)
    assert [(h.start, h.end) for h in hits] == [(len(before), len(before) + len(spelling.rstrip("\u200b\u00ad\u2060")))]
    masked = f.mask(text)
    assert masked[: len(before)] == before and masked[len(before) + len(spelling) :] == after
    assert masked.count("*") - text.count("*") == len(word)


# --- the character tables ------------------------------------------------------------------


def test_the_character_tables_hold_for_every_code_point():
    """The tables skip code points and take shortcuts that the whole Unicode range must bear
    out: no mark or format character outside the categorized planes but in plane 14, every
    character NFKC changes there covered, every character that composes with the one before it
    known as such."""
    categorized = chars._expand(chars._CATEGORIZED)
    attach = chars._expand(chars._EXTRA_ATTACH)
    second = set()
    for cp in range(0x110000):
        ch = chr(cp)
        category = unicodedata.category(ch)
        if cp not in categorized and not 0xD800 <= cp <= 0xDFFF:
            assert category[0] != "M" or 0xE0000 <= cp <= 0xE0FFF, hex(cp)
            assert category != "Cf" or 0xE0000 <= cp <= 0xE0FFF, hex(cp)
            if unicodedata.normalize("NFKC", ch) != ch:
                assert any(lo <= cp <= hi for lo, hi in chars._ASTRAL_COMPAT), hex(cp)
        decomposition = unicodedata.decomposition(ch)
        if decomposition and not decomposition.startswith("<") and len(decomposition.split()) == 2:
            second.add(int(decomposition.split()[1], 16))
        nfkc = unicodedata.normalize("NFKC", ch)
        if category[0] != "M" and nfkc and nfkc != ch:
            first = nfkc[0]
            if unicodedata.combining(first) or unicodedata.category(first)[0] == "M" or 0x1160 <= ord(first) <= 0x11FF:
                assert cp in attach, hex(cp)
    for cp in second:  # canonical composition's second characters: marks, or known
        assert unicodedata.category(chr(cp))[0] == "M" or cp in attach, hex(cp)


def test_the_index_map_survives_characters_the_tables_missed(monkeypatch):
    """If the tables missed a character that folds to several (or composes), the map is built
    the slow way, or the normalization redone on what the slow way describes."""
    f = wf("strasse", "fine", "ガキ", "café", "bad")
    texts = ["Die Straße, ﬁne.", "ｶﾞｷ!", "un cafe\u0301 b.a.d", "ß" * 40 + " ﬁne " + "ß" * 40]
    expected = [f.scan(text) for text in texts]
    never = re.compile("(?!)")
    patterns = chars._tables().bmp
    monkeypatch.setitem(patterns.__dict__, "chunk", never)
    assert [f.scan(text) for text in texts] == expected
    monkeypatch.setattr(patterns, "attach", never)  # compositions unknown as well
    for text in texts:
        for h in f.scan(text):
            assert 0 <= h.start < h.end <= len(text)


def test_the_tables_are_built_once_and_only_when_needed():
    assert chars._tables() is chars._tables()
    assert len(EMPTY) == 0  # building the empty filter at import needed no tables
