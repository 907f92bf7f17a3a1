"""One bad log never stops a run, and a store that cannot start says so.

The cases an attacker's pass found: a 12-byte ``{"type":[]}`` file beside good dsh
logs ended ``ingest`` with a traceback and nothing stored; a Claude Code ``Write``
input cut mid-emoji (``"# Project \\ud83d"``, what a JavaScript string cut mid-character
serializes to) lost every session of its tree; an OpenCode session id naming no
directory reached the file system; an MCP call to a store that could not start waited
200 s for readiness. Each is a test here, through the real CLI or the real
``sessionq mcp`` process driven by the MCP SDK's client.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from tests.data_dirs import stored_ids, stored_titles, unstartable_data_dir
from tests.data_paths import CORPUS_DIR
from tests.importers.agent_logs import WRITERS
from tests.mcp.stdio import stdio_session
from worker.cli.main import main
from worker.transports.mcp.extensions import TIMEOUT_META_KEY

INVALID_ON_PURPOSE: Final = ("cordis-tool-round", "authored-error", "blocked-log")
GOOD_DSH: Final = sorted(
    p for p in CORPUS_DIR.glob("*.jsonl") if not any(n in p.name for n in INVALID_ON_PURPOSE)
)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _first_id(path: Path) -> str:
    return str(json.loads(path.read_text().split("\n", 1)[0])["id"])


def test_a_twelve_byte_record_beside_ten_good_dsh_logs_is_one_rejection(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    good = GOOD_DSH[:10]
    for path in good:
        shutil.copyfile(path, logs / path.name)
    (logs / "zz.jsonl").write_bytes(b'{"type":[]}')
    code, out, err = _run("ingest", str(logs), "--data", str(tmp_path / "data"))
    assert code == 0, err
    assert "Traceback" not in out + err
    assert out.startswith("ingested 10 sessions, ")
    assert f"  {logs / 'zz.jsonl'}:1: " in out
    assert stored_ids(tmp_path / "data") == {_first_id(p) for p in good}


def _claude_tree(root: Path, sids: list[str], cut: str) -> Path:
    """Three Claude Code transcripts; the second one's ``Write`` input ends in ``cut``."""
    project = root / "-home-dev-prop"
    project.mkdir(parents=True)
    for n, sid in enumerate(sids):
        base: dict[str, Any] = {"sessionId": sid, "cwd": "/home/dev/prop"}
        content = f"# Project{cut}" if n == 1 else "# Project"
        records = [
            {
                **base,
                "type": "user",
                "uuid": "u0",
                "timestamp": "2025-11-10T10:00:00.000Z",
                "message": {"role": "user", "content": f"write the readme {n}"},
            },
            {
                **base,
                "type": "assistant",
                "uuid": "u1",
                "timestamp": "2025-11-10T10:00:01.000Z",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "model": "claude",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "Write",
                            "input": {"file_path": "/home/dev/prop/README.md", "content": content},
                        }
                    ],
                },
            },
        ]
        lines = "".join(json.dumps(r) + "\n" for r in records)  # \\ud83d as JavaScript writes it
        (project / f"{sid}.jsonl").write_text(lines)
    return root


def test_a_write_input_cut_mid_emoji_loses_no_session(tmp_path: Path) -> None:
    sids = [f"c0de0000-0000-4000-8000-00000000000{n}" for n in range(3)]
    tree = _claude_tree(tmp_path / "projects", sids, " \ud83d")
    data = tmp_path / "data"
    code, out, err = _run("ingest", str(tree), "--data", str(data))
    assert code == 0, err
    assert out.startswith("ingested 3 sessions, "), out
    assert stored_ids(data) == set(sids)
    code, text, err = _run(
        "call", "session_event_read", json.dumps({"seq": 3}), "--data", str(data),
        "--caller", sids[1],
    )  # fmt: skip
    assert code == 0, err
    # The tool input is JSON text as JSON.stringify writes it: the lone surrogate is its
    # six-character escape, shown escaped once more inside the event's JSON.
    assert '\\"content\\":\\"# Project \\\\ud83d\\"' in text
    code, text, err = _run(
        "call", "session_search", json.dumps({"query": "Project"}), "--data", str(data),
        "--caller", sids[0],
    )  # fmt: skip
    assert code == 0, err
    assert sids[1] in text and sids[2] in text


def test_an_opencode_id_that_names_no_directory_is_its_sessions_rejection(
    tmp_path: Path,
) -> None:
    root = tmp_path / "opencode"
    session = WRITERS["opencode"](root, [("user", "hello storage")], "0dd00000-0000-4000-8000-0")
    good = WRITERS["opencode"](root, [("user", "hello storage")], "900d0000-0000-4000-8000-0")
    for bad_id in ("ses_../../../../etc", "ses\x00x", "ses_" + "x" * 300):
        obj = json.loads(session.read_text())
        obj["id"] = bad_id
        session.write_text(json.dumps(obj))
        data = tmp_path / f"data-{len(bad_id)}"
        code, out, err = _run("ingest", str(root), "--data", str(data))
        assert code == 0, err
        assert f"{session}:1: the session id cannot name a directory of the storage" in out
        assert stored_ids(data) == {json.loads(good.read_text())["id"]}


async def test_a_store_that_cannot_start_says_why_in_every_mcp_answer(tmp_path: Path) -> None:
    data = unstartable_data_dir(tmp_path / "data")
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copyfile(GOOD_DSH[0], logs / GOOD_DSH[0].name)
    caller = _first_id(GOOD_DSH[0])
    args = ("--data", str(data), "--sessions", str(logs), "--caller", caller)
    async with stdio_session(*args) as session:
        for _ in range(2):  # a deadline of an hour: only the cause can end the call
            result = await session.call_tool(
                "session_search", {"query": "hello"}, meta={TIMEOUT_META_KEY: 3_600_000}
            )
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            assert result.is_error
            assert block.text.startswith(
                "SESSION_QUERY_TOOL_FAILED: the session store cannot start: "
            ), block.text
            assert "not a database" in block.text


TOKEN: Final = "ghp_Cu79idWElOKZyDuZ4vkmpiw8Qx3Lr7Tk9Nb2"  # 36 characters after its prefix
CUT: Final = TOKEN[:28]  # what a 40-byte title kept of it


def test_a_secret_crossing_the_title_cut_never_reaches_a_title(tmp_path: Path) -> None:
    sid = "5ec00000-0000-4000-8000-000000000001"
    project = tmp_path / "projects" / "-home-dev-prop"
    project.mkdir(parents=True)
    record = {
        "type": "user",
        "sessionId": sid,
        "cwd": "/home/dev/prop",
        "uuid": "u0",
        "timestamp": "2025-11-10T10:00:00.000Z",
        "message": {"role": "user", "content": f"deploy with {TOKEN} to the staging cluster"},
    }
    (project / f"{sid}.jsonl").write_text(json.dumps(record) + "\n")
    caller = "5ec00000-0000-4000-8000-000000000002"  # another session of the workspace
    other = {**record, "sessionId": caller, "message": {"role": "user", "content": "hello"}}
    (project / f"{caller}.jsonl").write_text(json.dumps(other) + "\n")
    for mode in ("on", "off", "store"):  # a derived title is redacted in every mode
        data = tmp_path / f"data-{mode}"
        code, _out, err = _run(
            "ingest", str(project.parent), "--data", str(data), "--redact-secrets", mode
        )
        assert code == 0, err
        title = stored_titles(data)[sid] or ""
        assert "deploy with [REDACTED:github-token]" in title, title
        for tool, args in (
            ("session_search", {"query": "staging cluster"}),
            ("session_trace", {"session_id": sid}),
            ("session_event_read", {"session_id": sid, "seq": 1}),  # the title event itself
        ):
            code, text, err = _run(
                "call", tool, json.dumps(args), "--data", str(data), "--caller", caller
            )
            assert code == 0, err
            titles = [line for line in text.splitlines() if f"{sid} — " in line]
            assert titles and all("[REDACTED:github-token]" in t for t in titles), text
            if mode != "off":  # off shows the prompt itself as written, token and all
                assert CUT not in text, (mode, tool, text)
