"""Display names are kept as one line of visible text (``comments.names``, issue 33, F12): what
the function keeps and drops, and the data migration that cleans the names stored before."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from comments.models import User
from comments.names import clean_display_name

from ..factories import UserFactory


def test_line_breaks_become_one_space_so_a_name_cannot_start_a_header():
    assert clean_display_name("Mallory\r\nBcc: victim@example.com") == "Mallory Bcc: victim@example.com"
    assert clean_display_name("Ada\n\n\tLovelace\u2028\u0085x") == "Ada Lovelace x"


def test_control_characters_and_bidi_overrides_and_isolates_go():
    assert clean_display_name("A\x00d\x07a\x1b\x7f\x9b") == "Ada"
    assert clean_display_name("\u202eAda\u202c \u202a\u202b\u202d\u2066\u2067\u2068Lovelace\u2069") == "Ada Lovelace"
    assert clean_display_name("Ada\u200b\ufeff\u200e\u200f") == "Ada"  # invisible format characters too


def test_joiners_that_scripts_and_emoji_sequences_need_are_kept():
    assert clean_display_name("می\u200cخواهم") == "می\u200cخواهم"
    assert clean_display_name("Ada 👩\u200d💻") == "Ada 👩\u200d💻"
    assert clean_display_name("李雷 Ünïcødé") == "李雷 Ünïcødé"


def test_whitespace_runs_collapse_and_the_ends_are_trimmed():
    assert clean_display_name("   Ada    \t  Lovelace  ") == "Ada Lovelace"


def test_a_long_name_is_cut_to_the_column_without_a_trailing_space():
    assert clean_display_name("a" * 99 + " b" + "c" * 50) == "a" * 99
    assert len(clean_display_name("x" * 500)) == 100


@pytest.mark.parametrize("nothing", ["", "\r\n", "\u202e\u202c", " \x00 \t "])
def test_a_name_of_nothing_visible_is_empty_for_its_caller_to_fall_back(nothing):
    assert clean_display_name(nothing) == ""


def test_the_data_migration_cleans_the_names_stored_before_and_leaves_the_others(db):
    dirty = UserFactory(username="mallory", display_name="Mallory\r\nBcc: victim@example.com")
    spoof = UserFactory(username="spoof", display_name="\u202eAda\u202c")
    blank = UserFactory(username="blank", display_name="\u2066\u2069")
    fine = UserFactory(username="ada", display_name="Ada Lovelace")
    migration = importlib.import_module("comments.migrations.0009_display_names_clean")

    migration.display_names_clean(apps, None)
    names = dict(User.objects.values_list("username", "display_name"))
    assert names[dirty.username] == "Mallory Bcc: victim@example.com"
    assert names[spoof.username] == "Ada"
    assert names[blank.username] == ""  # shown as the username, as every blank name is
    assert names[fine.username] == "Ada Lovelace"
    assert User.objects.get(pk=blank.pk).public_name == "blank"
