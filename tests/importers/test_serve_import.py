"""``serve --sessions`` over Claude Code and Codex trees: the watcher ingests them,
follows an appended record, reports a torn line until it is whole; ``/v1/sessions``
shows each session's source agent and filters on it; ``POST /v1/call`` takes the
``extensions.source_agent`` filter for ``session_search`` (the schemas stay upstream's)."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import orjson

from tests.data_paths import CORPUS_DIR
from tests.fixtures.importers import (
    CC_CHILD,
    CC_LEGACY_PARENT,
    CC_MAIN,
    CLAUDE_PROJECTS,
    CODEX_SESSIONS,
    CX_MAIN,
)
from tests.fixtures.serve import call_body, eventually, running_embedded

DSH_SHOP = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"
WATCH_S = 10.0


def _copy_tree(tmp_path: Path) -> tuple[Path, Path]:
    claude = tmp_path / "claude" / "projects"
    shutil.copytree(CLAUDE_PROJECTS, claude)
    codex = tmp_path / "codex" / "sessions"
    shutil.copytree(CODEX_SESSIONS, codex)
    return claude, codex


def _record(uuid: str, text: str) -> bytes:
    record = {
        "parentUuid": None,
        "isSidechain": False,
        "cwd": "/home/dev/shop",
        "sessionId": CC_MAIN,
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": uuid,
        "timestamp": "2025-10-01T12:00:00.000Z",
    }
    return orjson.dumps(record)


async def test_the_watcher_follows_a_claude_code_tree(tmp_path: Path) -> None:
    claude, _ = _copy_tree(tmp_path)
    main_log = claude / "-home-dev-shop" / f"{CC_MAIN}.jsonl"
    async with running_embedded(claude, tmp_path / "data") as (emb, base, http):
        assert emb.status.rejected == {}
        assert emb.service.get_session(CC_CHILD) is not None

        async def search(query: str) -> str:
            arguments = {"query": query, "session_id": CC_MAIN}
            body = call_body("session_event_search", arguments, CC_LEGACY_PARENT)
            async with http.post(f"{base}/v1/call", json=body) as resp:
                reply = await resp.json()
            assert reply["ok"], reply
            text: str = reply["text"]
            return text

        # A torn line is reported (file, line, reason) and the session keeps its events.
        with main_log.open("ab") as f:
            f.write(_record("z1", "the WATERMELON arrives")[:40])

        async def reported() -> str | None:
            return emb.status.rejected.get(str(main_log))

        reason = await eventually(reported, timeout=WATCH_S, what="the torn line reported")
        assert reason.startswith(f"{main_log}:15: line is not valid JSON")
        # The rest of the line arrives: the new record is applied and searchable.
        with main_log.open("ab") as f:
            f.write(_record("z1", "the WATERMELON arrives")[40:] + b"\n")

        async def found() -> bool:
            return "| user/message | current |" in await search("WATERMELON")

        await eventually(found, timeout=WATCH_S, what="the appended record searchable")
        assert str(main_log) not in emb.status.rejected


async def test_sessions_listing_shows_and_filters_the_source_agent(tmp_path: Path) -> None:
    claude, _ = _copy_tree(tmp_path)
    async with running_embedded(claude, tmp_path / "data") as (_emb, base, http):
        listing = f"{base}/v1/sessions?caller={quote(CC_MAIN)}"
        async with http.get(listing) as resp:
            sessions = await resp.json()
        assert {s["source_agent"] for s in sessions} == {"claude-code"}
        assert len(sessions) == 5  # the /home/dev/shop sessions
        async with http.get(listing + "&source_agent=codex") as resp:
            assert await resp.json() == []
        async with http.get(listing + "&source_agent=") as resp:
            assert resp.status == 400
            assert "source_agent" in (await resp.json())["error"]["message"]


async def test_call_extension_narrows_a_search_to_the_given_agents(tmp_path: Path) -> None:
    # A dsh session and a Claude Code session in one workspace (/home/dev/shop).
    sessions = tmp_path / "mixed"
    sessions.mkdir()
    claude, _ = _copy_tree(tmp_path)
    shop = claude / "-home-dev-shop"
    dsh = DSH_SHOP.read_bytes().replace(b'"/home/dev/acp-agent"', b'"/home/dev/shop"', 1)
    (sessions / "dsh-shop.jsonl").write_bytes(dsh)
    for sid in (CC_MAIN, CC_LEGACY_PARENT):  # the second one is the caller
        (sessions / f"{sid}.jsonl").write_bytes((shop / f"{sid}.jsonl").read_bytes())
    dsh_id = orjson.loads(dsh.split(b"\n", 1)[0])["id"]
    async with running_embedded(sessions, tmp_path / "data") as (emb, base, http):
        assert emb.status.rejected == {}

        async def post(body: object) -> tuple[int, dict[str, object]]:
            async with http.post(f"{base}/v1/call", json=body) as resp:
                return resp.status, await resp.json()

        # "the" is in both sessions' text.
        plain = call_body("session_search", {"query": "the"}, CC_LEGACY_PARENT)
        status, reply = await post(plain)
        assert status == 200 and reply["ok"], reply
        assert CC_MAIN in str(reply["text"]) and dsh_id in str(reply["text"])

        only_cc = {**plain, "extensions": {"source_agent": ["claude-code"]}}
        status, reply = await post(only_cc)
        assert status == 200 and reply["ok"], reply
        assert CC_MAIN in str(reply["text"]) and dsh_id not in str(reply["text"])

        only_dsh = {**plain, "extensions": {"source_agent": ["dsh"]}}
        status, reply = await post(only_dsh)
        assert dsh_id in str(reply["text"]) and CC_MAIN not in str(reply["text"])

        none = {**plain, "extensions": {"source_agent": ["codex"]}}
        status, reply = await post(none)
        assert status == 200 and reply["ok"], reply
        assert CC_MAIN not in str(reply["text"]) and dsh_id not in str(reply["text"])

        # Intersected with the call's own session_ids.
        both = call_body(
            "session_search", {"query": "the", "session_ids": [dsh_id]}, CC_LEGACY_PARENT
        )
        status, reply = await post({**both, "extensions": {"source_agent": ["claude-code"]}})
        assert CC_MAIN not in str(reply["text"]) and dsh_id not in str(reply["text"])

        targeted = call_body("session_trace", {}, CC_MAIN)
        status, reply = await post({**targeted, "extensions": {"source_agent": ["dsh"]}})
        assert status == 400 and "session_search only" in str(reply), reply
        status, reply = await post({**plain, "extensions": {"agent": ["dsh"]}})
        assert status == 400 and "unknown extension 'agent'" in str(reply), reply
        status, reply = await post({**plain, "extensions": {"source_agent": "dsh"}})
        assert status == 400, reply


async def test_serve_with_a_forced_format_reads_a_codex_tree(tmp_path: Path) -> None:
    _, codex = _copy_tree(tmp_path)
    async with running_embedded(codex, tmp_path / "data", log_format="codex") as (emb, _, _h):
        assert emb.status.rejected == {}
        record = emb.service.get_session(CX_MAIN)
        assert record is not None and record.header.source_agent == "codex"
