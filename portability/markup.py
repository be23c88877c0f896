"""Imported bodies made into this service's bodies.

A body here is Markdown, rendered to HTML by the one sanitising path of the product
(``comments.rendering.render_markdown``: raw HTML off, then nh3). Isso, Remark42 (``orig``)
and this service's export hand over Markdown, stored as it is. Disqus and WordPress (and
Remark42 backups without ``orig``) hand over HTML, which is converted to Markdown:

1. nh3 cleans it down to the elements Markdown can say (paragraphs, line breaks, emphasis,
   strike-through, code, preformatted blocks, quotes, lists, links, rules, headings); script
   and style are removed with their content, every other element is dropped and its text
   kept, and links keep only http, https and mailto URLs;
2. what is left is written as Markdown, its text escaped so that it stays text (a ``*`` or a
   ``<`` typed by the author is not markup);
3. the Markdown is rendered like any new comment. So imported HTML can carry no script, no
   event handler, no style and no image, whatever the source allowed.

WordPress keeps line breaks in its comment text and shows them (``wpautop``): for its bodies
(``HTML_LINES``) a blank line ends a paragraph and a line break is a line break.

The HTML this service renders converts back to Markdown that renders to the same HTML, so a
site exported as Disqus XML and imported again shows the same comments (one known exception:
text that looks like a link but was not one, such as ``www.example.org``, may come back linked
when a character next to it has to be escaped, e.g. a lone backtick). Text that looks like a
link in imported HTML becomes a link, as it would in any new comment.
"""

from __future__ import annotations

import re
from html import unescape

import nh3

from comments.rendering import URL_SCHEMES

from .formats import HTML, HTML_LINES, MARKDOWN

HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
BLOCKS = {"p", "div", "pre", "blockquote", "ul", "ol", "li", "hr", *HEADINGS}
KEPT_TAGS = BLOCKS | {"br", "strong", "b", "em", "i", "del", "s", "strike", "code", "a", "span"}
KEPT_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "code": {"class"}}
VOID = {"br", "hr"}

# A newline in HTML text is white space, kept as a soft line break (it renders as one); spaces
# before it would make a hard break, those after it an indented line.
_NEWLINES = re.compile(r"[ \t]*\r?\n[ \t\r\n]*")
_LINE_BREAKS = re.compile(r"\n{2,}|\n")
# A hard line break while running text is assembled (NUL never reaches here: readers drop it).
_HARD = "\x00"
# Characters that are Markdown wherever they stand; "_" only at a word's edge (inside a word
# it is not emphasis, and snake_case stays readable).
_ESCAPE = re.compile(r"[\\`*\[\]<~]|&(?=#?\w+;)|(?<!\w)_|_(?!\w)")
# What would start a block at the start of a line: heading, quote, list item, setext underline.
_LINE_START = re.compile(r"^(?:([#>+=-])|(\d{1,9})([.)]))")
_LANGUAGE = re.compile(r"\blanguage-([\w+#.-]+)")


class _Node:
    __slots__ = ("tag", "attrs", "children")

    def __init__(self, tag: str, attrs: dict):
        self.children: list[_Node | str]
        self.tag, self.attrs, self.children = tag, attrs, []


_BREAK, _PARAGRAPH = _Node("br", {}), _Node("para", {})


# nh3 writes HTML the same way every time (lower-case tags, attribute values in double quotes,
# no comments): a tag at a time, by these two patterns, is faster than html.parser and enough.
_TAG = re.compile(r'<(/?)([a-z][a-z0-9]*)((?:\s+[^\s=/>]+(?:="[^"]*")?)*)\s*/?>')
_ATTRIBUTE = re.compile(r'([^\s=/>]+)(?:="([^"]*)")?')


class _TreeBuilder:
    """Nodes of nh3's output: elements with their children, text unescaped."""

    def __init__(self, lines: bool):
        self.root = _Node("root", {})
        self.stack = [self.root]
        self.lines = lines
        self.in_pre = 0

    def feed(self, html: str) -> None:
        position = 0
        for match in _TAG.finditer(html):
            if match.start() > position:
                self.handle_data(unescape(html[position : match.start()]))
            closing, tag, attributes = match.groups()
            if closing:
                self.handle_endtag(tag)
            else:
                self.handle_starttag(tag, {k: unescape(v or "") for k, v in _ATTRIBUTE.findall(attributes)})
            position = match.end()
        if position < len(html):
            self.handle_data(unescape(html[position:]))

    def handle_starttag(self, tag, attrs: dict):
        node = _Node(tag, attrs)
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)
            self.in_pre += tag == "pre"

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                self.in_pre -= sum(n.tag == "pre" for n in self.stack[depth:])
                del self.stack[depth:]
                return

    def handle_data(self, data):
        children = self.stack[-1].children
        if not self.lines or self.in_pre:
            children.append(data)
            return
        position = 0
        for match in _LINE_BREAKS.finditer(data.replace("\r\n", "\n")):
            children.append(data[position : match.start()])
            children.append(_PARAGRAPH if len(match.group()) > 1 else _BREAK)
            position = match.end()
        children.append(data[position:])


_THEMATIC_BREAK = re.compile(r" {0,3}([-*_])(?: *\1){2,} *")


def _escape(text: str) -> str:
    return _ESCAPE.sub(lambda m: "\\" + m.group(), text)


def _text_run(text: str) -> str:
    return _escape(_NEWLINES.sub("\n", text))


def _escape_line_start(line: str) -> str:
    return _LINE_START.sub(lambda m: "\\" + m.group(1) if m.group(1) else f"{m.group(2)}\\{m.group(3)}", line)


def _inline(node: _Node, in_link: bool = False) -> str:
    """The Markdown of ``node``'s content as running text."""
    return "".join(_inline_piece(child, in_link) for child in node.children)


def _wrap(marker: str, inner: str) -> str:
    """``inner`` between emphasis markers, its edge spaces moved outside them (``** x**`` is
    not emphasis)."""
    core = inner.strip()
    if not core:
        return inner
    lead, trail = inner[: len(inner) - len(inner.lstrip())], inner[len(inner.rstrip()) :]
    return f"{lead}{marker}{core}{marker}{trail}"


def _code_span(text: str) -> str:
    text = text.replace("\n", " ")
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    # Markdown takes one space off each end of a span that has one at both (and is not all
    # spaces): a span that starts or ends with a backtick or a space gets one at both ends.
    pad = " " if text.strip(" ") and (text[0] in "` " or text[-1] in "` ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _link(node: _Node, in_link: bool) -> str:
    href = node.attrs.get("href", "").strip()
    text = _inline(node, in_link=True)
    if not href or in_link:
        return text
    destination = href.replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")
    title = node.attrs.get("title", "")
    if not title and text == _escape(href) and href.startswith(("http://", "https://")):
        return f"<{destination}>"
    if "(" in destination or ")" in destination:
        destination = f"<{destination}>"
    suffix = ' "' + title.replace("\\", "\\\\").replace('"', '\\"') + '"' if title else ""
    return f"[{text.strip() or _escape(href)}]({destination}{suffix})"


def _inline_piece(child, in_link: bool) -> str:
    if isinstance(child, str):
        return _text_run(child)
    tag = child.tag
    if child is _BREAK or child is _PARAGRAPH or tag == "br":
        return _HARD
    if tag in ("strong", "b"):
        return _wrap("**", _inline(child, in_link))
    if tag in ("em", "i"):
        return _wrap("*", _inline(child, in_link))
    if tag in ("del", "s", "strike"):
        return _wrap("~~", _inline(child, in_link))
    if tag == "code":
        return _code_span(_text_of(child))
    if tag == "a":
        return _link(child, in_link)
    if tag in BLOCKS:
        return " " + _inline(child, in_link) + " "
    return _inline(child, in_link)


def _text_of(node: _Node) -> str:
    return "".join(c if isinstance(c, str) else ("\n" if c.tag == "br" else _text_of(c)) for c in node.children)


def _paragraph(text: str) -> str:
    """Running text as a paragraph: trimmed, no break at its ends, and no line that would start
    a block."""
    text = text.strip(" \n" + _HARD)
    lines = [_escape_line_start(line.strip(" ")) for line in text.replace(_HARD, "\\\n").split("\n")]
    return "\n".join(line for line in lines if line)


def _blocks(node: _Node) -> list[str]:
    """The Markdown blocks of ``node``'s content, in order."""
    blocks: list[str] = []
    running: list[str] = []

    def flush():
        text = _paragraph("".join(running))
        if text:
            blocks.append(text)
        running.clear()

    previous_list = None  # (tag, alternate) of the block just written, when it is a list
    for child in node.children:
        if isinstance(child, str) and not child.strip():
            running.append(_inline_piece(child, False))  # white space between blocks
        elif child is _PARAGRAPH:
            flush()
        elif isinstance(child, _Node) and child.tag in ("ul", "ol"):
            flush()
            # A list right after a list of its kind would continue it: the markers alternate
            # ("-" then "*", "." then ")"), so two lists stay two.
            alternate = previous_list == (child.tag, False)
            blocks.extend(_list_block(child, alternate))
            previous_list = (child.tag, alternate)
        elif isinstance(child, _Node) and child.tag in BLOCKS:
            flush()
            blocks.extend(_block(child))
            previous_list = None
        else:
            running.append(_inline_piece(child, False))
            previous_list = None
    flush()
    return blocks


def _block(node: _Node) -> list[str]:
    tag = node.tag
    if tag in ("p", "div", "li"):
        return _blocks(node)
    if tag in HEADINGS:
        inline = _inline(node)
        if tag in ("h1", "h2") and _HARD in inline.strip(" \n" + _HARD):
            # A line break in a heading: only a setext heading (h1, h2) holds one.
            body = _paragraph(inline)
            return [f"{body}\n{'=' if tag == 'h1' else '-'}"] if body else []
        text = inline.replace(_HARD, " ").replace("\n", " ").strip()
        return [f"{'#' * int(tag[1])} {text}"] if text else []
    if tag == "hr":
        return ["---"]
    if tag == "pre":
        return [_fenced(node)]
    if tag == "blockquote":
        inner = "\n\n".join(_blocks(node))
        return ["\n".join(f"> {line}".rstrip() for line in inner.split("\n"))] if inner else []
    return _list_block(node, False)


def _list_block(node: _Node, alternate: bool) -> list[str]:
    return [_list(node, alternate)] if any(isinstance(c, _Node) and c.tag == "li" for c in node.children) else []


def _fenced(node: _Node) -> str:
    code = next((c for c in node.children if isinstance(c, _Node) and c.tag == "code"), None)
    language = _LANGUAGE.search(code.attrs.get("class", "")) if code is not None else None
    text = _text_of(node)
    if text.endswith("\n"):
        text = text[:-1]
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`{3,}", text)), default=0) + 1)
    return f"{fence}{language.group(1) if language else ''}\n{text}\n{fence}"


def _list(node: _Node, alternate: bool) -> str:
    items = [c for c in node.children if isinstance(c, _Node) and c.tag == "li"]
    # A list whose items hold paragraphs is a loose one: its items are set apart by blank lines.
    loose = any(isinstance(c, _Node) and c.tag == "p" for item in items for c in item.children)
    try:
        number = int(node.attrs.get("start") or 1)
    except ValueError:
        number = 1
    out = []
    for item in items:
        if node.tag == "ol":
            marker = f"{number}{')' if alternate else '.'} "
        else:
            marker = "* " if alternate else "- "
        number += 1
        body = ("\n\n" if loose else "\n").join(_blocks(item)) or ""
        indent = " " * len(marker)
        lines = body.split("\n")
        rest = "".join("\n" + (indent + line if line else "") for line in lines[1:])
        if _THEMATIC_BREAK.fullmatch(marker + lines[0]):
            # Items that open with a list of empty items read "- - -", a rule: the item's content
            # starts on the next line instead.
            out.append(marker.rstrip() + "\n" + indent + lines[0] + rest)
        else:
            out.append(marker + lines[0] + rest)
    return ("\n\n" if loose else "\n").join(out)


def html_to_markdown(html: str, *, lines: bool = False) -> str:
    """Markdown saying what ``html`` says (see the module's docstring). ``lines``: line breaks
    in its text count (WordPress)."""
    if "<" not in html and "&" not in html and not lines:
        return _paragraph(_text_run(html))
    cleaned = nh3.clean(
        html,
        tags=KEPT_TAGS,
        attributes=KEPT_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel=None,
        strip_comments=True,
    )
    builder = _TreeBuilder(lines)
    builder.feed(cleaned)
    return "\n\n".join(_blocks(builder.root)).strip()


def to_markdown(body: str, markup: str) -> str:
    """An imported body as this service stores it."""
    if markup == HTML:
        return html_to_markdown(body)
    if markup == HTML_LINES:
        return html_to_markdown(body, lines=True)
    assert markup == MARKDOWN, markup
    return body.strip()
