"""Production never imports the tests (issue 29): every module under engines/, protocol/, bench/
and conformance/ is parsed and none of its imports, at any depth, names ``tests``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRODUCTION = ("engines", "protocol", "bench", "conformance", "benchmarks")


def imported_modules(path: Path) -> list[str]:
    """Absolute module names imported by a file (relative imports resolved against its package)."""
    package = list(path.relative_to(REPO).parent.parts)
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            if node.module:
                names.append(".".join(base + [node.module]))
            else:
                names += [".".join(base + [alias.name]) for alias in node.names]
    return names


def production_files() -> list[Path]:
    return sorted(p for top in PRODUCTION for p in (REPO / top).rglob("*.py"))


def test_the_production_packages_are_there():
    files = production_files()
    for top in PRODUCTION:
        assert any(p.relative_to(REPO).parts[0] == top for p in files), top
    assert REPO / "conformance" / "oracles.py" in files


@pytest.mark.parametrize("path", production_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_production_module_imports_tests(path):
    bad = [name for name in imported_modules(path) if name == "tests" or name.startswith("tests.")]
    assert not bad, f"{path.relative_to(REPO)} imports {bad}"


def test_the_check_sees_an_import_of_tests(monkeypatch):
    sample = REPO / "bench" / "_probe_never_written.py"
    source = "from tests import oracles\nimport tests.harness\nfrom .. import tests as t\n"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert imported_modules(sample) == ["tests", "tests.harness", "tests"]
