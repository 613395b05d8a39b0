"""docs/security.md names the tests that hold each line of the threat model: every one it names must exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)((?:::\w+)?)")


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_test_the_security_doc_names_exists() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    references = REFERENCE.findall(text)
    assert len(references) > 20
    missing = []
    for file, name in references:
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif name and name[2:] not in _test_names(path):
            missing.append(file + name)
    assert missing == []


def test_the_readme_links_the_security_doc() -> None:
    assert "(docs/security.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
