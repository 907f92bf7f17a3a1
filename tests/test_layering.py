"""The layering rules of the packages, checked on the source: ``indexer`` never imports
``worker``; the MCP front end never imports the HTTP one (what both need lives below
them: ``worker.webguard``, ``worker.tools``, ``worker.local_service``); no product module
is longer than 400 lines (one concern per module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, at any depth (lazy imports inside functions
    included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _offenders(package: str, forbidden: str) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _modules(package)
        for name in sorted(_imports(path))
        if name == forbidden or name.startswith(forbidden + ".")
    ]


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("indexer", "worker"), ("worker/mcp", "worker.http")],
)
def test_a_package_does_not_import_what_sits_beside_or_above_it(
    package: str, forbidden: str
) -> None:
    assert _offenders(package, forbidden) == []


def test_the_rule_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from worker.http import api\n    import worker.http.ops\n")
    assert {"worker.http", "worker.http.api", "worker.http.ops"} <= _imports(module)


def test_no_product_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in ("indexer", "worker")
        for path in _modules(package)
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
