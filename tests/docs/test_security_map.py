"""docs/security.md names, for each threat, the test that attacks it: every test file it names
exists, and every test it names by ``file::name`` is a test of that file. A map that points at
a renamed or removed test is a control nobody checks any more."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "security.md"
NAMED = re.compile(r"`(tests/[\w/.*]+?)(?:::(\w+))?`")
ALSO = re.compile(r"`::(\w+)`")


def _tests_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_the_security_map_names_exists():
    text = PAGE.read_text(encoding="utf-8")
    named = 0
    for line in text.splitlines():
        last_file = None
        for match in re.finditer(rf"{NAMED.pattern}|{ALSO.pattern}", line):
            path, name, also = match.group(1), match.group(2), match.group(3)
            if path is not None:
                matches = sorted(ROOT.glob(path)) if "*" in path else [ROOT / path]
                assert matches and all(m.exists() for m in matches), f"security.md names {path}, which does not exist"
                last_file = matches[0] if path.endswith(".py") else None
                named += 1
            else:
                name = also
            if name is not None:
                assert last_file is not None, f"security.md names ::{name} with no test file before it"
                assert name in _tests_of(last_file), (
                    f"security.md names {last_file.name}::{name}, which is no test there"
                )
    assert named >= 20
