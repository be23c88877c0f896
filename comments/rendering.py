"""Markdown to safe HTML, and ``@name`` mentions.

markdown-it-py parses with raw HTML disabled; nh3 (ammonia) then sanitizes the output anyway,
so a parser bug can never let a script through.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "p",
    "br",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "code": {"class"}}
URL_SCHEMES = {"http", "https", "mailto"}

# A mention is "@" + a name. A name is made of word characters in any script (Chinese,
# Japanese and Korean names too) and ".+-", and ends at a space or punctuation, full-width
# punctuation included: "@张三，你好" mentions 张三; text with no space after a name
# ("@张三你好") names "张三你好" (readers write the space, as on Weibo). What may stand right
# before the "@" is anything but what an e-mail address's local part is made of, so
# "zhang@example.com" mentions nobody while "回复@张三：" (a reply's usual opening) mentions 张三.
MENTION_RE = re.compile(r"(?<![A-Za-z0-9_.+@-])@([\w.+-]{1,150})")


# A body with every kind of link, rendered once when the parser is built (``_build_markdown``).
_LINKS = "[text](https://example.com/a%20b) <https://example.com/%41> https://example.com/x?y=1#z"


def _build_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": True, "typographer": False})
    md.enable(["linkify", "strikethrough"])
    # Images in comments are a tracking and abuse vector; their syntax stays literal text.
    md.disable("image")
    # mdurl fills its per-process tables of URL escapes on first use, and publishes each table
    # before filling it: a thread of a gthread worker that rendered a link meanwhile read a
    # half-built table (IndexError, a 500, seen under load in bench/http.py). Rendering every
    # kind of link once, at import (one thread, under the import lock), fills them first.
    md.render(_LINKS)
    return md


_MARKDOWN = _build_markdown()


# Plain text: what most comments are. Its HTML is its paragraphs, which the parser and the
# sanitizer would give too (``tests/comments/test_rendering.py`` holds the two equal for any
# such text) at a fifth of their cost, and which cannot carry markup: plain text has no "<",
# ">" or "&". Plain means made only of word characters but "_", spaces, line breaks and
# punctuation that starts no Markdown construct here: no emphasis, code, link, autolink,
# heading, list, quote, rule, entity, escape or hard break, and nothing linkify could take for
# an address: an email's "@", a domain's "." before a letter ("3.5" and "v1.2.0", a "." between
# digits, are plain: linkify takes no address without a letter after a dot), a URL's "/" (a
# scheme's ":" makes no link without it, and "mailto:" none without an "@", so ":" is plain).
_NOT_PLAIN = re.compile(r"[^\w \n,;:!?'\"().，。！？、：；“”‘’（）《》〈〉「」『』【】…—·]|_|(?<!\d)\.\w|\.(?=[^\W\d])")
# A line that would open an ordered list ("1." or "1)"); every line must also start and end
# with a character that is not a space (leading spaces indent, trailing ones break the line).
_ORDERED_ITEM = re.compile(r"\d{1,9}[.)]")


def _plain_html(body: str) -> str | None:
    """``render_markdown(body)`` if ``body`` is plain text (above), else None."""
    if _NOT_PLAIN.search(body):
        return None
    paragraphs: list[list[str]] = [[]]
    for line in body.split("\n"):
        if not line:
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        if line[0] == " " or line[-1] == " " or _ORDERED_ITEM.match(line):
            return None
        paragraphs[-1].append(line)
    return "\n".join("<p>" + "\n".join(lines) + "</p>" for lines in paragraphs if lines)


def _parsed_html(body: str) -> str:
    """Any body through the parser and the sanitizer."""
    return nh3.clean(
        _MARKDOWN.render(body),
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="nofollow ugc noopener",
    ).strip()


def render_markdown(body: str) -> str:
    """Sanitized HTML for a Markdown body."""
    html = _plain_html(body)
    return _parsed_html(body) if html is None else html


def parse_mentions(body: str, limit: int) -> list[str]:
    """Distinct mentioned names, lowercased, in order of first appearance, at most ``limit``."""
    seen: dict[str, None] = {}
    for match in MENTION_RE.finditer(body):
        name = match.group(1).rstrip(".")
        if name and name.lower() not in seen:
            seen[name.lower()] = None
            if len(seen) >= limit:
                break
    return list(seen)
