"""Markdown rendering: safe to share between the threads of a gthread worker, and the same
HTML whether a plain comment takes the short path or the parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from comments import rendering

REPO = Path(__file__).resolve().parents[2]

# In a fresh interpreter: import the renderer, then report mdurl's tables of URL escapes.
_PROBE = """
import json
import comments.rendering
import mdurl._decode, mdurl._encode
tables = [*mdurl._encode.encode_cache.values(), *mdurl._decode.decode_cache.values()]
print(json.dumps({"encode": len(mdurl._encode.encode_cache), "decode": len(mdurl._decode.decode_cache),
                  "sizes": sorted({len(t) for t in tables})}))
"""


def test_importing_the_renderer_fills_the_url_escape_tables_before_any_request_renders():
    # mdurl publishes each table before filling it; a thread that read one half-built raised
    # IndexError (a 500 under load). A fresh process, so no earlier test filled them.
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["encode"] >= 1 and found["decode"] >= 1
    assert found["sizes"] == [128]


def test_links_render_after_the_warm_up():
    html = rendering.render_markdown("see https://example.com/a%20b and [x](https://example.com/%41)")
    assert 'href="https://example.com/a%20b"' in html and 'href="https://example.com/%41"' in html


# Text made of what plain comments are made of, and of what would make them Markdown: a letter
# after a ".", a digit then "." or ")" opening a line, spaces at either end of a line, a scheme
# ("http:", "mailto:") before "/" or "@".
_PLAINISH = st.lists(
    st.sampled_from(
        [
            *"abcdeorstuwmz",
            *"hilpfx",
            *"ABC",
            *"0129",
            *" \n.()\"',!?:/@",
            *"你好，。！世界…—",
            "http:",
            "mailto:",
            "www",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_PLAINISH)
@example("see example.com")
@example("1. first")
@example("  indented")
@example("broken  \nline")
@example("version 1.2.3.4 at 10:30")
@example("mailto:me")
@example("1.2.com")
def test_plain_text_renders_as_the_parser_would(body):
    html = rendering._plain_html(body)
    if html is not None:
        assert html == rendering._parsed_html(body)


@pytest.mark.parametrize(
    "body",
    [
        "Great article, thanks!",
        "你好，世界！写得真好。",
        'He said "no" (twice)... Fine?',
        "First paragraph.\n\nSecond one\nwith a line break.",
        "Update: it works in 3.12, at 10:30 today (v2.0.1).",
    ],
)
def test_everyday_comments_take_the_plain_path(body):
    assert rendering._plain_html(body) == rendering._parsed_html(body)


@pytest.mark.parametrize(
    "body",
    [
        "**bold**",
        "a_b",
        "see https://x.test",
        "mail me@example.com",
        "1) one",
        "x  \ny",
        "    code",
        "a.io",
        "1.2.io",
        "x1.5b.com",
        "http://x",
        "mailto:a@b",
        "&amp;",
        "<b>",
    ],
)
def test_markdown_and_markup_take_the_parser(body):
    assert rendering._plain_html(body) is None
