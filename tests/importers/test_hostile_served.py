"""``sessionq serve --sessions`` as a real process over a tree of hostile files
(``hostile_tree``): the good logs are applied and searchable, an appended event too;
the symlink loop, the FIFO and the line nested 1,000 levels deep are each named once on
stderr (the deep one with its line), also after the deep log changes and is read again;
the process keeps running and SIGTERM stops it without a traceback."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from tests.builders import user
from tests.data_paths import REPO_ROOT
from tests.fixtures.importers import CC_LEGACY_PARENT, CC_MAIN
from tests.fixtures.mcp import subprocess_env
from tests.fixtures.waiting import wait_for
from tests.importers.hostile_tree import HostileTree, hostile_tree
from tests.importers.test_serve_import import _record

DEADLINE_S = 120.0
READY = re.compile(r"^ready: .*; console (http://127\.0\.0\.1:\d+)/$", re.M)


def _call(base: str, tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
    body = {"tool": tool, "arguments": arguments, "caller": {"session_id": caller}}
    request = urllib.request.Request(
        f"{base}/v1/call",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        reply: dict[str, Any] = json.loads(resp.read())
    assert reply["ok"], reply
    return reply


def _append_event(path: Path, text: str) -> None:
    last = orjson.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    with path.open("ab") as f:
        f.write(orjson.dumps(user(last["seq"] + 1, text, time=last["time"] + 1)) + b"\n")


def test_serve_over_a_hostile_tree_serves_the_rest_and_names_each_bad_file_once(
    tmp_path: Path,
) -> None:
    tree: HostileTree = hostile_tree(tmp_path / "root")
    out_path, err_path = tmp_path / "serve.out", tmp_path / "serve.err"
    argv = [sys.executable, "-m", "worker", "serve", "--sessions", *tree.roots]
    argv += ["--data", str(tmp_path / "data"), "--listen", "127.0.0.1:0"]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=subprocess_env(), stdin=subprocess.DEVNULL,
            stdout=out, stderr=err,
        )  # fmt: skip
    try:
        ready = wait_for(
            lambda: READY.search(out_path.read_text()) or proc.poll() is not None,
            "the ready line",
        )
        assert proc.poll() is None, err_path.read_text()
        assert isinstance(ready, re.Match)
        assert ", 3 files skipped (each named above)" in ready.group(0), ready.group(0)
        base = ready.group(1)

        found = _call(base, "session_search", {"query": "the"}, CC_LEGACY_PARENT)
        assert CC_MAIN in found["text"]
        _call(base, "session_trace", {}, tree.dsh_id)  # the good dsh log is there

        # The deep log changes (read again, rejected again), then a good one grows.
        _append_event(tree.deep, "deeper still")
        with (tree.claude / "-home-dev-shop" / f"{CC_MAIN}.jsonl").open("ab") as f:
            f.write(_record("z1", "the PERSIMMON arrives") + b"\n")

        def appended() -> bool:
            arguments = {"query": "PERSIMMON", "session_id": CC_MAIN}
            reply = _call(base, "session_event_search", arguments, CC_LEGACY_PARENT)
            return "| user/message | current |" in reply["text"]

        wait_for(appended, "the appended event searchable")
        assert proc.poll() is None, err_path.read_text()
        stderr = err_path.read_text()
        for bad in (tree.loop, tree.fifo):
            assert stderr.count(str(bad)) == 1, stderr
        assert f"{tree.loop}: skipped: a symlink loop" in stderr
        assert f"{tree.fifo}: skipped: a FIFO" in stderr
        assert stderr.count(str(tree.deep)) == 1, stderr
        assert tree.deep_reason in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
            raise AssertionError("SIGTERM did not stop serve") from None
    stderr = err_path.read_text()
    assert code == 0, (code, stderr)
    assert "Traceback" not in stderr, stderr
