"""What a one-shot command loads: ``sessionq --help`` (and every command's ``--help``)
builds the whole parser without importing any command's module or a heavy dependency,
and one ``sessionq call --data`` loads no transport (Kafka client, MCP SDK, HTTP
servers), no token cryptography and no metrics registry.

Checked structurally, never by timing: a real ``sessionq`` process runs the command,
then prints the modules it imported (``sys.modules``), so an eager import added later
fails here. ``worker.cli.commands`` and the parser must name the same commands.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.builders import assistant, header, user
from tests.fixtures.processes import run
from tests.fixtures.stores import build_store
from worker.cli.commands import HANDLERS, handler
from worker.cli.parser import build_parser

REPO: Final = Path(__file__).resolve().parents[2]

# Imported by the commands that need them, never to build the parser.
HEAVY: Final = frozenset(
    {
        "aiohttp",
        "aiokafka",
        "cryptography",
        "detect_secrets",
        "jwt",
        "mcp",
        "obstore",
        "prometheus_client",
        "pydantic",
        "pydantic_settings",
        "starlette",
        "tantivy",
        "uvicorn",
        "watchfiles",
        "zstandard",
    }
)
# Not needed by one tool call over a data dir.
NOT_FOR_A_CALL: Final = frozenset(
    {
        "aiohttp",
        "aiokafka",
        "cryptography",
        "jwt",
        "mcp",
        "obstore",
        "prometheus_client",
        "starlette",
        "uvicorn",
        "watchfiles",
    }
)
COMMAND_MODULES: Final = frozenset(path.partition(":")[0] for path in HANDLERS.values())

# Runs ``main`` once per argv given (a JSON list of argv lists), output discarded, then
# prints the names of every module the process imported.
PROBE: Final = """
import contextlib, io, json, sys
from worker.cli import main
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    if code not in (0, None):
        raise SystemExit(f"sessionq {argv} exited {code}")
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(*argvs: list[str]) -> set[str]:
    """Every module a real ``sessionq`` process imported to run the argvs in turn."""
    done = run([sys.executable, "-c", PROBE, json.dumps(list(argvs))])
    assert done.returncode == 0, done.stderr
    modules: list[str] = json.loads(done.stdout)
    return set(modules)


def top_level(modules: set[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


def command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> set[str]:
    """Every runnable command's path ("call", "topics create"; argparse has no public walk)."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found |= command_paths(child, (*path, name))
    if path and not found:
        found.add(" ".join(path))
    return found


def test_the_parser_and_the_handlers_name_the_same_commands() -> None:
    paths = command_paths(build_parser())
    assert paths == set(HANDLERS)
    for path in sorted(paths):
        assert callable(handler(path)), path


def test_every_commands_help_loads_no_command_and_no_heavy_dependency() -> None:
    helps = [["--help"], *([*path.split(), "--help"] for path in sorted(HANDLERS))]
    modules = imported_by(*helps)
    assert top_level(modules) & HEAVY == set()
    assert modules & COMMAND_MODULES == set()


def test_the_parsed_command_names_its_handler() -> None:
    args = build_parser().parse_args(["snapshot", "restore", "--from", "x"])
    assert args.run == "snapshot restore"
    assert handler(args.run).__name__ == "cmd_snapshot_restore"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("startup") / "data"
    build_store(
        data,
        [
            (header("start-caller", cwd="/w"), [user(0, "where is the start-up needle")]),
            (header("start-other", cwd="/w"), [assistant(0, "the start-up needle is here")]),
        ],
    )
    return data


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("session_trace", {"session_id": "start-other"}), ("session_search", {"query": "needle"})],
)
def test_one_call_over_a_data_dir_loads_no_transport(
    data_dir: Path, tool: str, arguments: dict[str, str]
) -> None:
    caller = ["--caller", "start-caller", "--data", str(data_dir)]
    modules = imported_by(["call", tool, json.dumps(arguments), *caller])
    assert "worker.calls.pipeline" in modules  # the call ran in-process
    assert top_level(modules) & NOT_FOR_A_CALL == set()
    assert modules & (COMMAND_MODULES - {"worker.cli.store_commands"}) == set()
