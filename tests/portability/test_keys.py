"""The key and URL an imported thread's subject gets (``portability.keys``): the widget's default
key computed from a URL (Chromium's own answers for the same addresses are pinned by
tests/browser/test_widget_default_key.py), URL rules, and the choice of what keys are made of."""

from __future__ import annotations

import pytest

from portability.formats import Thread
from portability.keys import ImportOptions, KeyFrom, OptionError, page_key, parse_url_rule


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("https://blog.example/2019/hello/", "/2019/hello/"),
        ("https://blog.example/2019/hello", "/2019/hello"),  # a trailing slash is the address's own
        ("https://blog.example/2019/hello/?utm_source=feed#comments", "/2019/hello/"),
        ("https://blog.example", "/"),
        ("https://blog.example?x=1", "/"),
        ("https://blog.example/2020/中文/", "/2020/%E4%B8%AD%E6%96%87/"),
        ("https://blog.example/a b/|^`{}", "/a%20b/%7C%5E%60%7B%7D"),
        ("https://blog.example/%7e%zz/100%", "/%7e%zz/100%"),  # escapes stay as they are
        ("https://blog.example/a/./b/../c/%2E%2e", "/a/"),
        ("HTTPS://Blog.Example/Case/", "/Case/"),  # the path keeps its case
        ("https://blog.example\\a\\b", "/a/b"),
        ("/posts/第二/", "/posts/%E7%AC%AC%E4%BA%8C/"),  # a path alone (Isso's uri)
        ("post-hello", ""),
        ("ftp://blog.example/x", ""),
        ("//blog.example/x", ""),
        ("", ""),
    ],
)
def test_the_page_key_is_what_location_pathname_says_at_that_address(address, key):
    assert page_key(address) == key


def test_a_rule_ending_with_a_slash_is_a_prefix_and_the_longest_prefix_wins():
    options = ImportOptions.parse(
        map_url=[
            "https://old.example/=https://new.example/",
            "https://old.example/blog/=https://new.example/posts/",
            "https://old.example/blog/about.html=https://new.example/about/",
        ]
    )
    assert options.remap("https://old.example/blog/2019/x/?q=1") == "https://new.example/posts/2019/x/?q=1"
    assert options.remap("https://OLD.example/blog/y") == "https://new.example/posts/y"  # hosts have no case
    assert options.remap("https://old.example/other/") == "https://new.example/other/"
    assert options.remap("https://old.example/blog/about.html") == "https://new.example/about/"
    assert options.remap("https://old.example/blog/about.html?x") == "https://new.example/posts/about.html?x"
    assert options.remap("http://old.example/blog/") == "http://old.example/blog/"  # another scheme: no rule
    assert options.remap("https://old.example.net/") == "https://old.example.net/"


def test_a_bare_origin_is_the_prefix_of_its_whole_site():
    rule = parse_url_rule("https://old.example=https://new.example")
    assert (rule.old, rule.new, rule.prefix) == ("https://old.example/", "https://new.example/", True)


def test_an_old_address_may_hold_an_equals_sign():
    rule = parse_url_rule("https://old.example/?p=42=https://new.example/about/")
    assert (rule.old, rule.new, rule.prefix) == ("https://old.example/?p=42", "https://new.example/about/", False)


@pytest.mark.parametrize(
    ("map_url", "key_from", "message"),
    [
        (["https://old.example/"], None, "takes OLD=NEW"),
        (["https://old.example/=mailto:me@example.com"], None, "must be an http:// or https:// URL"),
        (["https://old.example/=https://"], None, "the new address must be an http:// or https:// URL with a host"),
        (["https://a.example/=https://b.example/", "https://A.example/=https://c.example/"], None, "mapped twice"),
        ([], "slug", "use one of path, url, id"),
    ],
)
def test_options_that_cannot_be_used_say_why(map_url, key_from, message):
    with pytest.raises(OptionError, match=message):
        ImportOptions.parse(map_url=map_url, key_from=key_from)


JEKYLL = Thread(
    source_id="7001",
    identifier="https://old.example/2019/01/05/hello.html",
    address="https://old.example/2019/01/05/hello.html",
    fallback="disqus:7001",
)
HUGO = Thread(source_id="7002", address="https://old.example/notes/?utm_source=feed", fallback="disqus:7002")


def test_a_thread_is_keyed_by_its_identifier_else_its_path_by_default():
    options = ImportOptions.parse(map_url=["https://old.example/=https://new.example/"])
    assert options.subject_of(JEKYLL, identifier_is_key=True) == (
        [
            "https://old.example/2019/01/05/hello.html",
            "/2019/01/05/hello.html",
            "https://new.example/2019/01/05/hello.html",
        ],
        "https://new.example/2019/01/05/hello.html",
    )
    keys, url = options.subject_of(HUGO, identifier_is_key=True)
    assert keys[0] == "/notes/" and url == "https://new.example/notes/?utm_source=feed"
    # A post id is no page's key unless asked for.
    post = Thread(source_id="1", identifier="1", address="https://old.example/p/", fallback="wordpress:1")
    assert options.subject_of(post, identifier_is_key=False)[0] == ["/p/", "https://new.example/p/"]
    assert ImportOptions(key_from=KeyFrom.ID).subject_of(post, identifier_is_key=False)[0][0] == "1"


def test_key_from_picks_the_first_key_and_a_thread_without_one_falls_back():
    assert ImportOptions(key_from=KeyFrom.PATH).subject_of(JEKYLL, identifier_is_key=True)[0][0] == (
        "/2019/01/05/hello.html"
    )
    assert ImportOptions(key_from=KeyFrom.URL).subject_of(HUGO, identifier_is_key=True)[0][0] == (
        "https://old.example/notes/?utm_source=feed"
    )
    assert ImportOptions(key_from=KeyFrom.ID).subject_of(HUGO, identifier_is_key=True)[0][0] == "/notes/"
    nothing = Thread(source_id="9", fallback="disqus:9")
    assert ImportOptions(key_from=KeyFrom.PATH).subject_of(nothing, identifier_is_key=True) == (["disqus:9"], "")
    too_long = Thread(source_id="8", address="https://old.example/" + "x" * 300, fallback="disqus:8")
    assert ImportOptions().subject_of(too_long, identifier_is_key=True)[0] == ["disqus:8"]
