"""The layering rules of the packages, checked on the source: ``indexer`` never imports
``worker``; the MCP front end never imports the HTTP one (what both need lives below
them: ``worker.web``, ``worker.webguard``, ``worker.tools``, ``worker.local_service``); the
calls (``worker.calls``) know no transport and no host, the host side no transport; no
product module is longer than 400 lines (one concern per module); no test module imports
a conftest."""

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
    [
        ("indexer", "worker"),
        ("worker/transports/mcp", "worker.transports.http"),
        ("worker/calls", "worker.transports"),  # the pipeline never knows its transport
        ("worker/calls", "worker.host"),
        ("worker/host", "worker.transports"),  # a host speaks the protocol, not a transport
    ],
)
def test_a_package_does_not_import_what_sits_beside_or_above_it(
    package: str, forbidden: str
) -> None:
    assert _offenders(package, forbidden) == []


def test_the_rule_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from worker.web import asgi\n    import worker.web.server\n")
    assert {"worker.web", "worker.web.asgi", "worker.web.server"} <= _imports(module)


def test_no_product_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in ("indexer", "worker")
        for path in _modules(package)
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def _conftest_imports(path: Path) -> list[str]:
    """The conftest modules ``path`` imports (absolute or relative)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
            found += [n for n in names if n.split(".")[-1] == "conftest"]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[-1] == "conftest"]
    return found


def test_no_test_module_imports_a_conftest() -> None:
    """The tests share their scaffolding through ``tests/fixtures/`` (its fixtures are
    plugins of ``tests/conftest.py``), never by importing a conftest."""
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in _modules("tests")
        if (found := _conftest_imports(path))
    }
    assert offenders == {}


def test_the_conftest_rule_sees_both_spellings(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tests.serve.conftest import x\nfrom .conftest import y\n")
    assert _conftest_imports(module) == ["tests.serve.conftest", "conftest"]
