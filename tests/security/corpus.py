"""The XSS corpus (``xss_payloads.txt``) as payloads, and what each input of the service makes of
one: a body as it is, a display name cut as the service cuts names, an http(s) URL that URL
validation lets through."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FILE = Path(__file__).with_name("xss_payloads.txt")
NUMBER = "§"
_ESCAPE = re.compile(r"\\(n|t|\\|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})")


@dataclass(frozen=True)
class Payload:
    number: int
    text: str

    @property
    def name(self) -> str:
        """As a display name: names are 1..100 characters, trimmed (SSO, guests, imports)."""
        return self.text.strip()[:100] or f"payload {self.number}"

    @property
    def title(self) -> str:
        """As a subject's title (at most 300 characters)."""
        return self.text[:300]

    @property
    def url(self) -> str:
        """An http(s) URL carrying the payload in its path, which URL validation (the subject
        API's, an import's) accepts: no white space."""
        return f"https://x.example/{self.number}/" + re.sub(r"\s+", "/", self.text)

    @property
    def key(self) -> str:
        return f"xss-{self.number}"

    def __str__(self) -> str:
        return f"#{self.number} {self.text!r}"


def _unescape(line: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1)
        if code == "n":
            return "\n"
        if code == "t":
            return "\t"
        if code == "\\":
            return "\\"
        return chr(int(code[1:], 16))

    return _ESCAPE.sub(one, line)


def load() -> list[Payload]:
    payloads: list[Payload] = []
    for line in FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line == "#" or line.startswith("# "):
            continue
        number = len(payloads) + 1
        payloads.append(Payload(number, _unescape(line).replace(NUMBER, str(number))))
    return payloads


PAYLOADS = load()
BY_NUMBER = {p.number: p for p in PAYLOADS}

# Pages that show one object (a task, an admin change form) cost a page load each, and escape
# each payload alike: they are opened for this sample, one payload of each way out of a context
# (an attribute in either quotes, a field's text, the title, a script, the tag itself, an
# address, a template, an entity, a namespace, a character).
_SAMPLE = (
    '"><img src=x onerror=__xss(§)>',
    "'><img src=x onerror=__xss(§)>",
    '" autofocus onfocus="__xss(§)',
    "</textarea><img src=x onerror=__xss(§)>",
    "</title><img src=x onerror=__xss(§)>",
    "</script><script>__xss(§)</script>",
    "<img src=x onerror=__xss(§)>",
    "<svg onload=__xss(§)>",
    "javascript:__xss(§)",
    "{{constructor.constructor('__xss(§)')()}}",
    "&lt;script&gt;__xss(§)&lt;/script&gt;",
    "<math><mtext><table><mglyph><style><img src=x onerror=__xss(§)>",
    "\u202e<img src=x onerror=__xss(§)>",
)
SAMPLE = [p for p in PAYLOADS if any(p.text == _unescape(t).replace(NUMBER, str(p.number)) for t in _SAMPLE)]
assert len(SAMPLE) == len(_SAMPLE), "a sampled payload is no longer in the corpus"


def describe(number: str | int) -> str:
    """The payload a hook's call names, for a failure message."""
    try:
        return str(BY_NUMBER[int(number)])
    except (KeyError, ValueError):
        return f"#{number} (not one of the corpus: a payload without its number)"
