"""``/v1/transcript`` and ``/v1/export`` of a real ``serve``: a session read as a
conversation (messages, thinking, tool calls paired with their results, stream chunks
merged, subagents linked), paged, authorized as the tools authorize, and redacted."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tests.builders import BASE_TIME, assistant, chunk, header, plain, user
from tests.fixtures.serve import Served, running_embedded
from tests.indexer.test_record_path import write_log
from worker.devtools.demo_corpus.layout import session_path
from worker.reader.markdown import TAGS
from worker.transports.http.reader_api import MAX_READS, MAX_WAITING

TOKEN = "ghp_" + "Zx8Qm3Lp7Rt2Vb9Nc4Df6Gs1Jk5Hw0Ya2Eu7Io"


def tool_call(seq: int, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return plain(
        seq,
        "tool/call",
        {"turn": 1, "step": 1, "callId": call_id, "name": name, "arguments": arguments},
    )


def tool_result(seq: int, call_id: str, text: str, *, error: bool = False) -> dict[str, Any]:
    message = {
        "source": {"kind": "tool", "callId": call_id},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": [{"type": "text", "text": text}],
                "isError": error,
            }
        ],
        "role": "user",
        "id": f"r-{seq}",
    }
    event = plain(seq, "tool/result", {"turn": 1, "step": 1, "message": message})
    event["surfaceOp"] = "append"
    return event


async def get(served_http: Any, url: str) -> tuple[int, Any]:
    async with served_http.get(url) as resp:
        body = await resp.read()
        kind = resp.headers.get("Content-Type", "")
        return resp.status, json.loads(body) if "json" in kind else body.decode()


def tags_of(nodes: list[Any]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, list):
            found.add(node[0])
            found |= tags_of(node[2])
    return found


async def test_a_demo_session_reads_as_a_conversation(served: Served) -> None:
    idem = served.summary.find("pay-idempotency")
    child = next(s for s in served.summary.subagents if s.parent == idem.id)
    url = f"{served.base}/v1/transcript?caller={idem.id}&session={idem.id}&limit=500"
    status, page = await get(served.http, url)
    assert status == 200, page
    facts = page["session"]
    assert facts["id"] == idem.id and facts["title"] == idem.title
    assert [c["id"] for c in facts["children"]] == [child.id]
    kinds = [b["kind"] for b in page["blocks"]]
    assert {"user", "assistant", "tool", "meta"} <= set(kinds)
    assert "partial" not in kinds  # every stream ended in its message: chunks merged away
    tools = [b for b in page["blocks"] if b["kind"] == "tool"]
    assert tools and all(b["result"] is not None and b["name"] for b in tools)
    assert all(b["result"]["seq"] > b["seq"] for b in tools)  # the call, then its result
    linked = [b for b in tools if "child" in b]
    assert [b["child"]["id"] for b in linked] == [child.id] and linked[0]["name"] == "subagent"
    for block in page["blocks"]:
        if block["kind"] in ("user", "assistant"):
            assert "text" not in block and tags_of(block["md"]) <= TAGS
    # Every event is in exactly one place: blocks and meta runs cover seq 0..last.
    assert page["next"] is None and facts["last_seq"] == idem.events - 1


async def test_pages_cover_the_session_and_never_split_a_stream(served: Served) -> None:
    idem = served.summary.find("pay-idempotency")
    seen: list[int] = []
    first: int | None = 0
    while first is not None:
        url = f"{served.base}/v1/transcript?caller={idem.id}&from={first}&limit=7"
        status, page = await get(served.http, url)
        assert status == 200 and page["from"] == first
        assert all(b["kind"] != "partial" for b in page["blocks"])
        seen.append(first)
        first = page["next"]
    assert len(seen) > 5 and seen == sorted(set(seen))


async def test_the_reader_keeps_the_tools_workspace_rule(served: Served) -> None:
    idem = served.summary.find("pay-idempotency")
    shop = served.summary.find("shop-cart-rounding")
    for path in ("transcript", "export"):
        status, body = await get(
            served.http, f"{served.base}/v1/{path}?caller={shop.id}&session={idem.id}"
        )
        assert status == 404 and body["error"]["code"] == "SESSION_QUERY_TOOL_UNAUTHORIZED", body
        assert idem.title not in json.dumps(body)
        status, body = await get(
            served.http, f"{served.base}/v1/{path}?caller=nobody&session={idem.id}"
        )
        assert status == 404 and body["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND", body
    no_cwd = next(s for s in served.summary.sessions if s.cwd is None)
    status, body = await get(
        served.http, f"{served.base}/v1/transcript?caller={no_cwd.id}&session={idem.id}"
    )
    assert status == 404
    status, body = await get(served.http, f"{served.base}/v1/transcript?caller={no_cwd.id}")
    assert status == 200 and body["session"]["id"] == no_cwd.id


async def test_bad_parameters_are_one_clear_line(served: Served) -> None:
    idem = served.summary.find("pay-idempotency")
    cases = {
        f"/v1/transcript?session={idem.id}": "caller is required",
        f"/v1/transcript?caller={idem.id}&from=-1": "from must be an integer",
        f"/v1/transcript?caller={idem.id}&limit=501": "limit must be an integer from 0 to 500",
        f"/v1/transcript?caller={idem.id}&limit=x": "limit must be an integer",
    }
    for path, said in cases.items():
        status, body = await get(served.http, f"{served.base}{path}")
        assert status == 400 and said in body["error"]["message"], (path, body)


def hostile_log(root: Path) -> None:
    events = [
        user(
            0,
            f"deploy with {TOKEN} please\n\n<script>window.__pwned=1</script>"
            " [x](javascript:alert(1)) ![p](http://127.0.0.1:9/pixel.png)",
        ),
        assistant(1, "```bash\ngh auth login\n```\nDone: **ok**"),
        tool_call(2, "c1", "bash", json.dumps({"cmd": f"echo {TOKEN}"})),
        tool_result(3, "c1", f"token={TOKEN}\n```\n# not a heading\n"),
        # an interrupted stream: the token split across two deltas, no message after them
        chunk(4, f"the key is {TOKEN[:20]}"),
        chunk(5, f"{TOKEN[20:]} keep it"),
    ]
    head = header("leaky", cwd="/ws", created_at=BASE_TIME)
    write_log(root / session_path("/ws", "leaky"), head, events)


async def test_secrets_never_reach_a_transcript_or_an_export(tmp_path: Path) -> None:
    hostile_log(tmp_path / "root")
    async with running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, http):
        status, page = await get(http, f"{base}/v1/transcript?caller=leaky")
        assert status == 200, page
        text = json.dumps(page)
        assert TOKEN not in text and TOKEN[:20] not in text and "[REDACTED:" in text
        kinds = [b["kind"] for b in page["blocks"]]
        assert kinds == ["user", "assistant", "tool", "meta", "partial"], kinds
        partial = page["blocks"][-1]
        assert "[REDACTED:" in json.dumps(partial["md"])
        first = page["blocks"][0]["md"]
        assert tags_of(first) == {"p"}  # the script, the link and the image are text
        assert "<script>window.__pwned=1</script>" in json.dumps(first)
        assert page["blocks"][1]["md"][0] == ["pre", {"lang": "bash"}, ["gh auth login\n"]]

        status, exported = await get(http, f"{base}/v1/export?caller=leaky")
        assert status == 200 and isinstance(exported, str)
        assert TOKEN not in exported and TOKEN[:20] not in exported
        assert "### User · seq 0" in exported and "### Tool call `bash`" in exported
        # the result's own ``` cannot close the fence it is shown in
        assert "````\ntoken=[REDACTED:" in exported


async def test_an_export_with_its_subagents(served: Served) -> None:
    idem = served.summary.find("pay-idempotency")
    child = next(s for s in served.summary.subagents if s.parent == idem.id)
    url = f"{served.base}/v1/export?caller={idem.id}&session={idem.id}&subtree=1"
    async with served.http.get(url) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/markdown")
        assert resp.headers["Content-Disposition"] == f'attachment; filename="{idem.id}.md"'
        text = await resp.text()
    assert text.startswith(f"# {idem.title}\n")
    assert f"- Session: `{child.id}`" in text and f"- Parent: `{idem.id}`" in text
    assert text.index(f"`{idem.id}`") < text.index(f"`{child.id}`")
    status, alone = await get(served.http, url.replace("&subtree=1", ""))
    assert status == 200 and child.id not in alone.split("\n### ")[0]
    assert f"- Session: `{child.id}`" not in alone


# ---- an attacker's pass: each finding, reproduced ------------------------------------------------
def pieces(text: str, size: int = 8) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def leaked(shown: str) -> set[str]:
    """The 8-character pieces of the token that ``shown`` holds."""
    return {p for p in pieces(TOKEN) if p in shown}


def delta(seq: int, text: str, kind: str = "text-delta") -> dict[str, Any]:
    event = chunk(seq, text)
    event["data"]["chunk"]["type"] = kind
    return event


def write(root: Path, sid: str, events: list[dict[str, Any]], cwd: str = "/ws") -> None:
    write_log(root / session_path(cwd, sid), header(sid, cwd=cwd, created_at=BASE_TIME), events)


async def test_a_stream_is_never_shown_redacted_in_part(tmp_path: Path) -> None:
    """A page that starts inside an interrupted stream, and a stream longer than a page
    (with and without its message): no piece of a secret it streams is shown."""
    said = f"the key is {TOKEN} ok"
    short = [user(0, "go"), *(delta(1 + i, c) for i, c in enumerate(said))]
    thinking = [user(0, "go"), *(delta(1 + i, c, "reasoning-delta") for i, c in enumerate(said))]
    long_text = "x" * 480 + said + " tail " * 20
    long = [user(0, "go"), *(delta(1 + i, c) for i, c in enumerate(long_text))]
    ended = [*long, assistant(len(long), long_text)]
    for sid, events in (("s", short), ("r", thinking), ("l", long), ("e", ended)):
        write(tmp_path / "root", sid, events)
    async with running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, http):
        for sid, events in (("s", short), ("r", thinking)):
            for first in range(len(events)):
                _, page = await get(http, f"{base}/v1/transcript?caller={sid}&from={first}")
                assert not leaked(json.dumps(page, ensure_ascii=False)), (sid, first)
        for sid in ("l", "e"):
            for query in ("from=1&limit=500", "from=0&limit=500", "from=400&limit=200"):
                _, page = await get(http, f"{base}/v1/transcript?caller={sid}&{query}")
                assert not leaked(json.dumps(page, ensure_ascii=False)), (sid, query)
            _, exported = await get(http, f"{base}/v1/export?caller={sid}")
            assert not leaked(exported), sid
        _, whole = await get(http, f"{base}/v1/transcript?caller=s")
        assert "[REDACTED:" in json.dumps(whole)  # shown whole, the stream is readable


async def test_what_rendering_decodes_is_redacted_too(tmp_path: Path) -> None:
    """Escaped tool arguments, a secret as an object key, Markdown entities and escapes,
    a link's target, a workspace path: none shows the secret decoded."""
    escaped = "".join(f"\\u{ord(c):04x}" for c in TOKEN)
    events = [
        user(
            0,
            f"gh&#112;_{TOKEN[4:]} and ghp\\_{TOKEN[4:]} and [l](https://x/?q=gh&#x70;_{TOKEN[4:]})",
        ),
        tool_call(1, "c1", "bash", '{"cmd": "echo ' + escaped + '"}'),
        tool_result(2, "c1", "done"),
        plain(
            3,
            "assistant/message",
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "role": "assistant",
                    "id": "a",
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                    "content": [
                        {"type": "tool-call", "id": "c2", "name": "x", "arguments": {TOKEN: "v"}}
                    ],
                },
            },
        )
        | {"surfaceOp": "append"},
    ]
    write(tmp_path / "root", "dec", events, cwd=f"/home/u/{TOKEN}")
    async with running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, http):
        _, page = await get(http, f"{base}/v1/transcript?caller=dec")
        shown = json.dumps(page, ensure_ascii=False)
        assert not leaked(shown), leaked(shown)
        assert page["session"]["cwd"].startswith("/home/u/[REDACTED:")
        _, exported = await get(http, f"{base}/v1/export?caller=dec")
        assert not leaked(exported) and "### Tool call `bash`" in exported


async def test_hostile_shapes_and_sizes_answer_and_stay_bounded(tmp_path: Path) -> None:
    nested = "*" * 1000 + "a" + "*" * 1000
    brackets = "[" * 250 + "]" * 250
    events = [
        user(0, nested),
        tool_call(1, "c", "bash", brackets),
        plain(
            2,
            "user/message",
            {
                "content": [{"type": "text", "text": "odd"}],
                "source": {"kind": ["a"]},
                "role": "user",
                "id": "u",
            },
        )
        | {"surfaceOp": "append"},
        plain(3, "turn/end", {"turn": 1, "reason": {"kind": ["x"]}}),
    ]
    write(tmp_path / "root", "odd", events)
    async with running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, http):
        status, page = await get(http, f"{base}/v1/transcript?caller=odd")
        assert status == 200, page
        first, call = page["blocks"][0], page["blocks"][1]
        assert first["md"] == [["pre", {}, [nested]]]  # too deep to walk: shown as written
        assert call["input"] == brackets  # indenting would multiply it: shown as written
        assert page["blocks"][-1] == {
            **page["blocks"][-1],
            "kind": "note",
            "text": "Turn ended: unknown",
        }
        for query in ("from=%C2%B2", "limit=%D9%A3", "from=" + "9" * 5000):
            status, body = await get(http, f"{base}/v1/transcript?caller=odd&{query}")
            assert status == 400 and body["error"]["code"] == "BAD_REQUEST", (query, body)
        status, body = await get(http, f"{base}/v1/sessions?caller=odd&step_seq=%C2%B2")
        assert status == 400, body


async def test_reads_beyond_the_waiting_bound_are_refused_not_queued(served: Served) -> None:
    """``MAX_READS`` reads run, ``MAX_WAITING`` wait, the next is a 503 at once; a waiter
    that goes away frees its place; the held ones all finish once the reads end."""
    reader = served.embedded.reader
    idem = served.summary.find("pay-idempotency")
    scope = {"type": "http", "method": "GET", "path": "/v1/transcript", "headers": []}
    request = Request({**scope, "query_string": f"caller={idem.id}".encode()})
    release, lock, running = threading.Event(), threading.Lock(), [0]

    def held(_reader: Any, session: str) -> str:
        with lock:
            running[0] += 1
        release.wait(60)
        return session

    async def settled(what: str, done: Callable[[], bool]) -> None:
        for _ in range(2_000):
            if done():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(what)

    try:
        tasks = [asyncio.create_task(reader._read(request, held)) for _ in range(MAX_READS)]
        await settled("the reads run", lambda: running[0] == MAX_READS)
        tasks += [asyncio.create_task(reader._read(request, held)) for _ in range(MAX_WAITING)]
        await settled("the rest wait", lambda: reader._waiting == MAX_WAITING)

        refused = await reader._read(request, held)
        assert isinstance(refused, Response) and refused.status_code == 503
        assert b"BUSY" in bytes(refused.body)

        tasks[-1].cancel()  # a waiter whose client went away
        await settled("its place is free", lambda: reader._waiting == MAX_WAITING - 1)
        tasks[-1] = asyncio.create_task(reader._read(request, held))
        await settled("taken again", lambda: reader._waiting == MAX_WAITING)
    finally:
        release.set()
    answers = await asyncio.gather(*tasks)
    assert answers == [idem.id] * (MAX_READS + MAX_WAITING)
    assert reader._waiting == 0 and running[0] == MAX_READS + MAX_WAITING
