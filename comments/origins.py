"""Origins a site allows to embed its widget (``Site.allowed_origins``): checked and written the
way browsers send them in ``Origin`` headers, so that the comparison with the header (frame
ancestors, the counts API's CORS, the widget's messages) is a plain string match."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$|^\[[0-9a-f:.]+\]$")
_DEFAULT_PORTS = {"http": 80, "https": 443}
EXAMPLE = "https://blog.example"


def parse_origin(text: str) -> str:
    """The origin ``text`` names, as a browser writes it: scheme and host in lower case, no
    default port, no trailing slash (``HTTPS://Blog.Example:443/`` is ``https://blog.example``).
    ``ValueError`` with a sentence saying what is wrong when it is not an http(s) origin:
    anything beyond ``scheme://host[:port]`` (a path, a query, a user) is refused rather than
    dropped, since a browser would never send it."""
    text = text.strip()
    stripped = text[:-1] if text.endswith("/") else text
    try:
        parts = urlsplit(stripped)
        port = parts.port
    except ValueError:
        raise ValueError(f"“{text}” is not an origin: its port is not a number from 1 to 65535.") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not stripped.lower().startswith(f"{scheme}://"):
        raise ValueError(f"“{text}” is not an origin: it must start with https:// or http://, like {EXAMPLE}.")
    if parts.path or parts.query or parts.fragment or "?" in stripped or "#" in stripped:
        raise ValueError(f"“{text}” is not an origin: write only scheme://host[:port], without a path, like {EXAMPLE}.")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"“{text}” is not an origin: it must not name a user.")
    host = (parts.hostname or "").lower()
    if parts.netloc.startswith("[") or ":" in host:
        host = f"[{host}]"
    if not _HOST.match(host):
        raise ValueError(f"“{text}” is not an origin: “{host or '(nothing)'}” is not a host name.")
    if port == 0:
        raise ValueError(f"“{text}” is not an origin: its port is not a number from 1 to 65535.")
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def parse_origins(lines: list[str]) -> tuple[list[str], list[str]]:
    """``(origins, errors)`` of lines that each name an origin (blank lines skipped, each
    origin once, in the order given): every line that is not one gives an error sentence."""
    origins: list[str] = []
    errors: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            origin = parse_origin(line)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if origin not in origins:
            origins.append(origin)
    return origins, errors
