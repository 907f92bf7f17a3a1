"""Every importer is total: a mutated log of any format is at most its own file's
rejection, and the good logs beside it are stored.

Hypothesis takes one file of a format's fixture tree and mutates it: a value anywhere
in one record replaced by one of another type, an id of an odd shape, a string cut
mid-emoji (a lone surrogate), a huge value, a record replaced whole, a line dropped or
doubled, or the file cut at any byte (an Aider history, Markdown: a line dropped,
doubled, replaced or inserted, among them start lines, markers and tags of odd shapes,
bytes that are no UTF-8 and a huge line). ``sessionq ingest`` then reads the mutated tree
beside good logs of every format (their own ids): the run exits 0 without a
traceback, every good session is stored, and every file that was not stored is named
in one line ``<path>:<line>: <reason>``.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.logs.importers.detect import discover_report, discover_sources, read_source_pieces
from indexer.logs.reader import LogRejectedError
from tests.data_dirs import stored_ids
from tests.data_paths import (
    AIDER_DIR,
    CLAUDE_CODE_DIR,
    CODEX_DIR,
    COPILOT_DIR,
    CORPUS_DIR,
    GEMINI_DIR,
    OPENCODE_DIR,
)
from tests.importers.agent_logs import WRITERS
from tests.strategies import js_text
from worker.cli.main import main

TREES: Final = {
    "dsh": CORPUS_DIR,
    "claude-code": CLAUDE_CODE_DIR / "projects",
    "codex": CODEX_DIR / "sessions",
    "gemini": GEMINI_DIR,
    "opencode": OPENCODE_DIR,
    "copilot": COPILOT_DIR,
    "aider": AIDER_DIR,
}
DSH_FILES: Final = [
    "examples__acp-agent__bash-tool-turn__session.jsonl",
    "apps__web__minimal-preset__session.jsonl",
]
GOOD_DSH: Final = "apps__web__live-interactions__session.jsonl"
GOOD_TURNS: Final = [("user", "find the mutation canary"), ("assistant", "found it")]

ODD_STRINGS: Final = [
    "",
    ".",
    "..",
    "/",
    "a/b",
    "../../../etc/passwd",
    "ses\x00id",
    "\ud83d",
    "x\udc00y",
    "\u202e\u2066",
    "9" * 300,
    "2025-13-45T99:99:99Z",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "<environment_context>",
]
odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    js_text(max_size=12),
    st.sampled_from(ODD_STRINGS),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
    st.just([]),
    st.just({}),
    st.just("x" * (1 << 20)),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a member or item of a JSON value (the value itself: ``()``)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out.extend(_paths(child, (*prefix, i)))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    at = out
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = new
    return out


def _with_surrogate(value: Any, path: tuple[Any, ...]) -> Any:
    """The string at ``path`` cut mid-emoji (a lone high surrogate at its end)."""
    at = value
    for step in path:
        at = at[step]
    return _replace(value, path, at + "\ud83d") if isinstance(at, str) else value


@st.composite
def mutated_record(draw: st.DrawFn, record: Any) -> Any:
    path = draw(st.sampled_from(_paths(record)))
    how = draw(st.sampled_from(["value", "surrogate", "drop"]))
    if how == "surrogate":
        return _with_surrogate(record, path)
    if how == "drop" and path:
        out = copy.deepcopy(record)
        at = out
        for step in path[:-1]:
            at = at[step]
        del at[path[-1]]
        return out
    return _replace(record, path, draw(odd_values))


ODD_LINES: Final = [
    b"# aider chat started at ",
    b"# aider chat started at 2025-13-45 99:99:99",
    b"# aider chat started at 0001-01-01 00:00:00",
    b"####",
    b"#### /run",
    b"#### /ask",
    b"#### \xff\xfe",
    b">",
    b"> Model: ",
    b"> ## Running: ",
    b"</think>",
    b"<think>",
    b"<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>",
    b"\r",
    b"\xed\xa0\xbd",  # a lone surrogate's UTF-8 bytes
    b"x" * (1 << 20),
]


@st.composite
def mutated_markdown(draw: st.DrawFn, data: bytes) -> bytes:
    """An Aider history (``data``) mutated once, line by line."""
    lines = data.split(b"\n")
    i = draw(st.integers(0, max(0, len(lines) - 1)))
    op = draw(st.sampled_from(["truncate", "drop", "double", "replace", "insert", "insert"]))
    if op == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if op == "drop":
        del lines[i]
    elif op == "double":
        lines.insert(i, lines[i])
    else:
        odd = draw(st.one_of(st.sampled_from(ODD_LINES), st.binary(max_size=40)))
        if op == "replace":
            lines[i] = odd
        else:
            lines.insert(i, odd)
    return b"\n".join(lines)


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode()  # lone surrogates as \\udxxx escapes, as JavaScript


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes, suffix: str) -> bytes:
    """``data`` (a JSON-lines file, one JSON document, or a Markdown history) mutated
    once."""
    if suffix == ".md":
        return draw(mutated_markdown(data))
    jsonl = suffix == ".jsonl"
    how = draw(st.sampled_from(["record", "record", "record", "truncate", "lines"]))
    if how == "truncate" or not data.strip():
        return data[: draw(st.integers(0, len(data)))]
    if not jsonl:
        return _dump(draw(mutated_record(json.loads(data))))
    lines = data.split(b"\n")
    i = draw(st.integers(0, max(0, len(lines) - 2)))
    if how == "lines":
        op = draw(st.sampled_from(["drop", "double", "whole"]))
        if op == "drop":
            del lines[i]
        elif op == "double":
            lines.insert(i, lines[i])
        else:
            lines[i] = _dump(draw(odd_values))
        return b"\n".join(lines)
    try:
        record = json.loads(lines[i])
    except ValueError:
        return data
    lines[i] = _dump(draw(mutated_record(record)))
    return b"\n".join(lines)


def _good_logs(root: Path) -> dict[str, str]:
    """A good log of every format under ``root`` (ids of their own): session id by
    format."""
    out: dict[str, str] = {}
    for n, (fmt, write) in enumerate(sorted(WRITERS.items())):
        sid = f"900d0000-0000-4000-8000-{n:012d}"
        path = write(root / fmt, GOOD_TURNS, sid)
        out[fmt] = f"ses_{sid}" if fmt == "opencode" else sid
        if fmt == "aider":  # a session of a history is named by its file
            (source,) = discover_sources([path])
            assert source.session_id is not None
            out[fmt] = source.session_id
    dsh = root / "dsh"
    dsh.mkdir()
    shutil.copyfile(CORPUS_DIR / GOOD_DSH, dsh / "good.jsonl")  # not a victim: its own id
    out["dsh"] = json.loads((dsh / "good.jsonl").read_text().split("\n", 1)[0])["id"]
    return out


def _victims(fmt: str) -> list[Path]:
    tree = TREES[fmt]
    if fmt == "dsh":
        return [tree / name for name in DSH_FILES]
    suffixes = (".json", ".jsonl", ".md")
    return sorted(p for p in tree.rglob("*") if p.is_file() and p.suffix in suffixes)


def _tree(fmt: str, root: Path) -> Path:
    """A copy of ``fmt``'s fixture tree under ``root`` (dsh: its victim logs)."""
    tree = root / "tree"
    if fmt == "dsh":
        tree.mkdir()
        for name in DSH_FILES:
            shutil.copyfile(CORPUS_DIR / name, tree / name)
    else:
        shutil.copytree(TREES[fmt], tree)
    return tree


def _place(fmt: str, tree: Path, victim: Path) -> Path:
    return tree / (victim.name if fmt == "dsh" else victim.relative_to(TREES[fmt]))


@pytest.mark.parametrize("fmt", sorted(TREES))
@settings(max_examples=150, derandomize=True)
@given(data=st.data())
def test_every_importer_is_total(
    fmt: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Reading a mutated log raises nothing but the file's rejection (or an I/O error):
    every exception is ``<path>:<line>: <reason>``."""
    tree = _tree(fmt, tmp_path_factory.mktemp(f"total-{fmt}"))
    victim = data.draw(st.sampled_from(_victims(fmt)), label="file")
    original = victim.read_bytes()
    target = _place(fmt, tree, victim)
    target.write_bytes(data.draw(mutated_bytes(original, victim.suffix)))
    for source in discover_report([tree]).sources:
        try:
            for _piece in read_source_pieces(source):
                pass
        except LogRejectedError as exc:
            assert str(exc).startswith(f"{source.path}:") or str(exc).startswith(str(tree))
        except OSError:
            pass


@pytest.mark.parametrize("fmt", sorted(TREES))
@settings(max_examples=8, derandomize=True)
@given(data=st.data())
def test_a_mutated_log_never_stops_the_good_ones(
    fmt: str, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp(f"mutated-{fmt}")
    victim = data.draw(st.sampled_from(_victims(fmt)), label="file")
    tree = _tree(fmt, work)
    original = victim.read_bytes()
    mutated = data.draw(mutated_bytes(original, victim.suffix), label="mutated")
    _place(fmt, tree, victim).write_bytes(mutated)
    good = _good_logs(work / "good")
    roots = [str(tree), *(str(work / "good" / f) for f in sorted(good))]
    out = work / "out.txt"
    rc = _ingest(roots, work / "data", out)
    text = out.read_text()
    assert rc == 0, text
    assert "Traceback" not in text
    stored = stored_ids(work / "data")
    missing = {f: sid for f, sid in good.items() if sid not in stored}
    assert not missing, f"good logs not stored: {missing}\n{text}"
    for line in text.splitlines()[2:]:  # each rejection: "  <path>:<line>: <reason>"
        assert re.match(r"  /\S+:\d+: \S", line), line


def _ingest(roots: list[str], data: Path, out: Path) -> int:
    """``sessionq ingest`` in this process, its output (both streams) in ``out``."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = main(["ingest", *roots, "--data", str(data)])
    out.write_text(buf.getvalue())
    return rc
