"""The README and the guides link only to files of this repository, and each file they link to
exists (an operator reading them on a machine without internet can follow every link)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINKED_ONLY_INSIDE = [
    "README.md",
    "docs/embedding.md",
    "docs/production.md",
    "docs/getting-started.md",
    "docs/operations.md",
    "docs/scale-out.md",
    "docs/benchmarks.md",
    "docs/benchmarks-history.md",
    "docs/dependencies.md",
    "docs/fast-paths.md",
    "docs/likes-protocol.md",
]
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
BARE_LINK = re.compile(r"<(https?://[^>]+)>")


@pytest.mark.parametrize("name", LINKED_ONLY_INSIDE)
def test_every_link_is_to_a_file_of_the_repository(name):
    page = ROOT / name
    text = page.read_text(encoding="utf-8")
    assert not BARE_LINK.findall(text)
    targets = MARKDOWN_LINK.findall(text)
    assert targets
    for target in targets:
        assert "://" not in target and not target.startswith(("/", "mailto:")), target
        linked = (page.parent / target.split("#")[0]).resolve()
        assert linked.is_relative_to(ROOT) and linked.exists(), target
