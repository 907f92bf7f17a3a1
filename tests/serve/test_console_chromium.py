"""The web console in a real headless Chromium (``tests/serve/chromium.py``), as a user
meets it: opened without ``?caller=`` it picks the newest main session and shows it; the
caller's workspace is a tree with titles, agents and lineage; a session shows its lineage
and its events (±N around any event, paged); every id and event in an answer is a link;
the playground's default query finds sessions; and text from a hostile log stays text."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.builders import BASE_TIME, header, title, user
from tests.fixtures.serve import Served, call_body, eventually, running_embedded
from tests.indexer.test_record_path import write_log
from worker.devtools.demo_corpus import DemoSummary
from worker.devtools.demo_corpus.layout import session_path

from .chromium import (
    DevTools,
    chromium,
    chromium_binary,
    click,
    run_and_wait,
    screenshot,
    set_value,
    wait_answer,
    wait_js,
)


def newest_main(demo: DemoSummary) -> Any:
    return max((s for s in demo.sessions if not s.subagent), key=lambda s: s.created_at)


async def opened(page: DevTools, caller: str) -> None:
    """The page loaded, its caller is ``caller`` and its workspace list is in."""
    await wait_js(
        page,
        "document.readyState === 'complete' && !!document.getElementById('caller')",
        "console page loaded",
    )
    await wait_js(
        page,
        f"document.getElementById('caller').value === {json.dumps(caller)}"
        " && Number(document.getElementById('caller').dataset.loaded || 0) > 0",
        "the caller and its workspace",
    )


async def text_of(served: Served, tool: str, arguments: dict[str, Any], caller: str) -> str:
    reply = await served.call(call_body(tool, arguments, caller))
    assert reply["ok"] is True, reply
    return str(reply["text"])


async def test_console_opens_on_the_default_caller_and_browses(
    served: Served, tmp_path: Path
) -> None:
    chromium_binary()
    demo = served.summary
    caller = newest_main(demo)
    workspace = [s for s in demo.sessions if s.cwd == caller.cwd]
    parent = next(p for p in workspace if any(c.parent == p.id for c in workspace))
    child = next(c for c in workspace if c.parent == parent.id)
    async with chromium(f"{served.base}/", tmp_path / "profile") as page:
        await opened(page, caller.id)
        summary = await page.js("document.getElementById('caller-summary').textContent")
        assert caller.title in summary and "default" in summary, summary
        assert "caller=" not in await page.js("location.search")  # the default stays unpinned

        # The workspace as a tree: every session once, titles and agents, the child nested.
        items: list[dict[str, str]] = await page.js(
            "[...document.querySelectorAll('#session-list a.session')].map(a => ({"
            " id: a.dataset.id, title: a.querySelector('.title').textContent,"
            " sub: a.querySelector('.sub').textContent }))"
        )
        assert sorted(i["id"] for i in items) == sorted(s.id for s in workspace)
        for s in workspace:
            item = next(i for i in items if i["id"] == s.id)
            assert item["title"] == s.title and item["sub"].startswith("dsh · "), item
        nested_under = await page.js(
            f"document.querySelector('#session-list a.session[data-id={json.dumps(child.id)}]')"
            ".closest('ul').closest('li').querySelector(':scope > a.session').dataset.id"
        )
        assert nested_under == parent.id
        assert "caller" in next(i for i in items if i["id"] == caller.id)["sub"]

        # The caller's own session is shown first: its lineage as the tool answers it.
        _, trace = await wait_answer(page, "trace-output", what="caller trace", session=caller.id)
        assert trace == await text_of(served, "session_trace", {"session_id": caller.id}, caller.id)

        # A click in the list: that session's lineage, its child a link.
        await click(page, f"#session-list a.session[data-id={json.dumps(parent.id)}]")
        state, trace = await wait_answer(
            page, "trace-output", what="parent trace", session=parent.id
        )
        assert state == "ok"
        assert trace == await text_of(served, "session_trace", {"session_id": parent.id}, caller.id)
        assert await page.js("document.getElementById('detail-title').textContent") == parent.title
        current = await page.js(
            "document.querySelector('#session-list a.session[aria-current=true]').dataset.id"
        )
        assert current == parent.id

        # Events: the first window of N around seq N, as session_event_read answers it.
        n = int(await page.js("document.getElementById('event-window').value"))
        _, events = await wait_answer(
            page, "events-output", what="first events", session=parent.id, seq=str(n)
        )
        window = {"session_id": parent.id, "seq": n, "before": n, "after": n}
        assert events == await text_of(served, "session_event_read", window, caller.id)
        assert await page.js("document.getElementById('events-prev').disabled") is True

        # An event link re-centres the window on that event (±N), and N can change.
        await click(page, f"#events-output a[data-seq='{n + 2}']")
        _, events = await wait_answer(
            page, "events-output", what="event read", session=parent.id, seq=str(n + 2)
        )
        assert f"Target event seq {n + 2}:" in events
        assert await page.js("location.hash") == f"#/s/{parent.id}/e/{n + 2}"
        await set_value(page, "event-window", "2", "change")
        _, events = await wait_answer(page, "events-output", what="±2", seq=str(n + 2), window="2")
        window = {"session_id": parent.id, "seq": n + 2, "before": 2, "after": 2}
        assert events == await text_of(served, "session_event_read", window, caller.id)
        # Later ▶: the next window starts right after this one.
        await click(page, "#events-next")
        _, events = await wait_answer(page, "events-output", what="next page", seq=str(n + 7))
        assert f"- seq {n + 5} | " in events and f"- seq {n + 4} | " not in events

        # The child link in the lineage opens the child, whose ancestor is the parent.
        await click(page, f"#trace-output a[data-session='{child.id}']")
        _, trace = await wait_answer(page, "trace-output", what="child trace", session=child.id)
        assert f"Ancestors (nearest first):\n- {parent.id} — {parent.title} | " in trace

        # A workspace search; a session id in its answer navigates, so does a best match.
        idem = demo.find("pay-idempotency")
        await set_value(page, "search-query", "幂等性", "input")
        await page.js("document.getElementById('search-form').requestSubmit()")
        _, found = await wait_answer(page, "search-output", what="search", query="幂等性")
        assert found == await text_of(served, "session_search", {"query": "幂等性"}, caller.id)
        await click(page, f"#search-output a[data-session='{idem.id}']:not([data-seq])")
        await wait_answer(page, "trace-output", what="hit's trace", session=idem.id)
        assert await page.js("location.hash") == f"#/s/{idem.id}"
        assert await page.js("document.getElementById('search-view').hidden") is True
        await page.js("history.back()")
        await wait_js(page, "!document.getElementById('search-view').hidden", "search again")
        await wait_answer(page, "search-output", what="search again", query="幂等性")
        best = await page.js(
            f"document.querySelector(\"#search-output a[data-session='{idem.id}'][data-seq]\")"
            ".dataset.seq"
        )
        await click(page, f"#search-output a[data-session='{idem.id}'][data-seq]")
        _, events = await wait_answer(
            page, "events-output", what="best match", session=idem.id, seq=best
        )
        assert f"Target event seq {best}:" in events
        assert await page.js("document.getElementById('search-view').hidden") is True

        # Another caller from the picker: its workspace, written into the address.
        shop = demo.find("shop-cart-rounding")
        await set_value(page, "caller", shop.id, "change")
        await wait_js(
            page,
            f"!!document.querySelector('#session-list a.session[data-id={json.dumps(shop.id)}]')",
            "the shop workspace",
        )
        assert f"caller={shop.id}" in await page.js("location.search")
        listed = await page.js(
            "[...document.querySelectorAll('#session-list a.session')].map(a => a.dataset.id)"
        )
        assert sorted(listed) == sorted(s.id for s in demo.sessions if s.cwd == shop.cwd)


async def test_console_playground_in_chromium(served: Served, tmp_path: Path) -> None:
    chromium_binary()
    demo = served.summary
    caller = newest_main(demo)
    foreign = next(s for s in demo.sessions if s.cwd is not None and s.cwd != caller.cwd)
    async with chromium(f"{served.base}/#/playground", tmp_path / "profile") as page:
        await opened(page, caller.id)
        assert await page.js("document.getElementById('view-playground').hidden") is False
        assert await page.js("document.getElementById('view-browse').hidden") is True

        # The default example finds sessions; the answer is the tool's text, with links.
        arguments = json.loads(await page.js("document.getElementById('arguments').value"))
        assert await page.js("document.getElementById('tool').value") == "session_search"
        state, text = await run_and_wait(page)
        assert state == "ok", text
        assert text.startswith("Session search results ("), text
        assert text == await text_of(served, "session_search", arguments, caller.id)
        links = await page.js(
            "[...document.querySelectorAll('#output a')].map(a => [a.dataset.session,"
            " a.dataset.seq || null, a.getAttribute('href')])"
        )
        hits = [line.split(" ")[2] for line in text.split("\n") if ". Session " in line]
        assert set(hits) <= {s for s, seq, _ in links if seq is None}
        assert [s for s, seq, _ in links if seq is not None] == hits  # one best match each
        assert all(href.startswith("#/s/") for _, _, href in links)
        envelope = json.loads(await page.js("document.getElementById('reply-json').textContent"))
        assert envelope["ok"] is True and envelope["text"] == text

        # A session link in the answer opens the browse view on that session.
        await click(page, f"#output a[data-session='{hits[0]}']:not([data-seq])")
        await wait_answer(page, "trace-output", what="hit's trace", session=hits[0])
        assert await page.js("document.getElementById('view-browse').hidden") is False
        await page.js("location.hash = '#/playground'")
        await wait_js(page, "!document.getElementById('view-playground').hidden", "playground")

        # The example follows the tool; an error shows "Error: <message>" and its code.
        await set_value(page, "tool", "session_event_read", "change")
        read_example = json.loads(await page.js("document.getElementById('arguments').value"))
        assert "seq" in read_example and "session_id" in read_example
        state, text = await run_and_wait(page)
        assert state == "ok" and text.startswith(f"Session {read_example['session_id']} — ")
        await set_value(page, "tool", "session_trace", "change")
        await set_value(page, "arguments", json.dumps({"session_id": foreign.id}), "input")
        state, text = await run_and_wait(page)
        assert (state, text) == ("error", "Error: session target is outside the caller workspace")
        code = await page.js("document.getElementById('output-code').textContent")
        assert "SESSION_QUERY_TOOL_UNAUTHORIZED" in code
        await screenshot(page, tmp_path / "playground.png")


# ---- text from a hostile log stays text ---------------------------------------------------------
HOSTILE_CWD = '/ws/<b id="bold">x</b>'
HOSTILE_TITLE = '<img src=x onerror="window.__pwned = 1">'
HOSTILE_TEXT = "<script>window.__pwned = 2</script> needle <img src=x onerror=window.__pwned=3>"
HOSTILE_ID = 'evil"><img src=x onerror=window.__pwned=4>'


def hostile_root(root: Path) -> None:
    logs = [
        ("victim", None, 1, [user(0, HOSTILE_TEXT), title(1, HOSTILE_TITLE)]),
        (HOSTILE_ID, "victim", 2, [user(0, f"needle from the child {HOSTILE_TEXT}")]),
        ("me", None, 3, [user(0, "who calls")]),
    ]
    for sid, parent, minutes, events in logs:
        head = header(sid, cwd=HOSTILE_CWD, parent=parent, created_at=BASE_TIME + minutes * 60_000)
        write_log(root / session_path(HOSTILE_CWD, sid), head, events)


@contextlib.asynccontextmanager
async def hostile_console(tmp_path: Path) -> AsyncIterator[DevTools]:
    """The console over ``hostile_root``'s logs, opened as ``me``."""
    chromium_binary()
    hostile_root(tmp_path / "root")
    async with (
        running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, __),
        chromium(f"{base}/", tmp_path / "profile") as page,
    ):
        await opened(page, "me")
        yield page


async def test_console_renders_hostile_log_text_inert(tmp_path: Path) -> None:
    async with hostile_console(tmp_path) as page:
        await click(page, "#session-list a.session[data-id='victim']")
        _, trace = await wait_answer(page, "trace-output", what="trace", session="victim")
        assert f"- {HOSTILE_ID} — " in trace
        await wait_answer(page, "events-output", what="events", session="victim")
        await click(page, f"#trace-output a[data-session={json.dumps(HOSTILE_ID)}]")
        await wait_answer(page, "trace-output", what="child trace", session=HOSTILE_ID)
        _, events = await wait_answer(page, "events-output", what="child", session=HOSTILE_ID)
        assert HOSTILE_TEXT in events
        await set_value(page, "search-query", "needle", "input")
        await page.js("document.getElementById('search-form').requestSubmit()")
        _, found = await wait_answer(page, "search-output", what="search", query="needle")
        assert HOSTILE_ID in found and HOSTILE_TITLE in found
        await page.js("location.hash = '#/playground'")
        await set_value(page, "tool", "session_event_read", "change")
        await set_value(page, "arguments", '{"session_id": "victim", "seq": 0}', "input")
        state, text = await run_and_wait(page)
        assert state == "ok" and "window.__pwned = 2" in text

        # Nothing ran, no element came from the text, the text is shown as written.
        assert await page.js("typeof window.__pwned") == "undefined"
        assert await page.js("document.querySelectorAll('img, b, #bold').length") == 0
        assert await page.js("document.scripts.length") == 1  # the console's own module
        assert HOSTILE_TITLE in await page.js("document.getElementById('session-list').textContent")
        assert HOSTILE_CWD in await page.js("document.getElementById('workspace').textContent")


async def test_console_picks_a_caller_once_the_first_session_arrives(tmp_path: Path) -> None:
    """Opened on an empty store (the first ingest has nothing yet), the console waits and
    takes the first session the watcher applies as its caller."""
    chromium_binary()
    root = tmp_path / "root"
    root.mkdir()
    async with (
        running_embedded(root, tmp_path / "data") as (_, base, __),
        chromium(f"{base}/", tmp_path / "profile") as page,
    ):
        await wait_js(
            page,
            "(document.getElementById('caller-summary') || {}).textContent"
            " === 'no session in the store yet'",
            "the empty store said",
        )
        write_log(root / session_path("/ws", "first"), header("first", cwd="/ws"), [user(0, "hi")])

        async def caller() -> bool:
            return bool(
                await page.js(
                    "document.getElementById('caller').value === 'first'"
                    " && document.getElementById('caller').dataset.loaded === '1'"
                )
            )

        await eventually(caller, timeout=60, what="the first session as the caller")
        await wait_answer(page, "trace-output", what="its trace", session="first")


# ---- the link rules against the formats of SPEC §10 --------------------------------------------
SEARCH = """Session search results (3):

1. Session sess-b — Fix flaky parser
   Created: 2026-07-24T00:00:00.000Z
   Parent: root
   Availability: live, persisted
   Best match: seq 12 | assistant/message | current | 2026-07-24T00:01:00.000Z
   Snippet: …the parser needle was a stale cache…

2. Session sess-c — untitled
   Created: 2026-07-25T00:00:00.000Z
   Source agent: claude-code
   Parent: sess-b
   Availability: persisted
   Best match: seq 3 | tool/result | shadowed | 2026-07-25T00:00:05.123Z
   Snippet: parser needle found in tokenizer.ts

3. Session sess-d — a title that spans
   Parent: sess-x
   Best match: seq 99 | posing as fields
   Created: 2026-07-26T00:00:00.000Z
   Parent: [outside workspace]
   Availability: persisted
   Best match: seq 7 | turn/end | log-only | 2026-07-26T00:00:00.000Z
   Snippet: error parser needle overflow, see sess-e and sess-e-2

Result cap reached. Narrow the query or add filters to find additional matches."""

EVENT_SEARCH = """Session sess-b — Fix flaky parser

Event search results (2):
1. seq 12 | assistant/message | current | 2026-07-24T00:01:00.000Z
   Snippet: …the parser needle was a stale cache…
2. seq 4 | user/message | shadowed | 2026-07-24T00:00:30.000Z
   Snippet: where is the parser needle?"""

TRACE = """Session sess-c — Tokenizer follow-up
Created: 2026-07-25T00:00:00.000Z
Availability: persisted

Ancestors (nearest first):
- sess-b — Fix flaky parser | 2026-07-24T00:00:00.000Z | live, persisted
- [outside workspace boundary]

Descendants:
- sess-e — Cache audit | 2026-07-26T00:00:00.000Z | live
  - sess-f — untitled (title unavailable: SESSION_QUERY_SESSION_NOT_FOUND) | 2026-07-27T00:00:00.000Z | persisted
- [outside workspace subtree]
- sess-g — untitled — with a dash | 2026-07-27T00:00:50.000Z | live"""  # noqa: E501

EVENT_TRACE = """Session sess-b — Fix flaky parser
Target: seq 4 | assistant/message | shadowed | 2026-07-24T00:00:30.000Z
Replaced by: 8
Replacement chain: 8
Events replaced by target: 3
Events cited directly as sources: 3, 2
Direct derived events: none"""

EVENT_READ = """Session sess-b — Fix flaky parser
Target event seq 4:
```json
{
  "type": "assistant/message",
  "seq": 4,
  "text": "Subagent sess-e finished"
}
```

Before:
- seq 3 | user/message | 2026-07-24T00:00:20.000Z
  where is the parser needle?
  - seq 77 | an indented line of text
After:
- seq 5 | turn/end | 2026-07-24T00:00:40.000Z | (no semantic text)"""

LINK_CASES: list[tuple[str, str, str | None, list[tuple[str, int | None]]]] = [
    (
        "session_search", SEARCH, None,
        [("sess-b", None), ("sess-b", 12), ("sess-c", None), ("sess-b", None), ("sess-c", 3),
         ("sess-d", None), ("sess-d", 7), ("sess-e", None)],
    ),
    (
        "session_event_search", EVENT_SEARCH, "sess-b",
        [("sess-b", None), ("sess-b", 12), ("sess-b", 4)],
    ),
    (
        "session_trace", TRACE, "sess-c",
        [("sess-c", None), ("sess-b", None), ("sess-e", None), ("sess-f", None), ("sess-g", None)],
    ),
    (
        "session_event_trace", EVENT_TRACE, "sess-b",
        [("sess-b", None), ("sess-b", 4), ("sess-b", 8), ("sess-b", 8), ("sess-b", 3),
         ("sess-b", 3), ("sess-b", 2)],
    ),
    (
        "session_event_read", EVENT_READ, "sess-b",
        [("sess-b", None), ("sess-b", 4), ("sess-e", None), ("sess-b", 3), ("sess-b", 5)],
    ),
]  # fmt: skip


async def test_links_follow_the_tool_formats(served: Served, tmp_path: Path) -> None:
    """Every reference of SPEC §10's worked examples is a link, nothing a title or a
    snippet merely resembles is (``sess-x`` posing as a field), a workspace id is linked
    wherever it stands whole (``sess-e``, not ``sess-e-2``), and the rendered text is the
    answer unchanged."""
    chromium_binary()
    async with chromium(f"{served.base}/#/status", tmp_path / "profile") as page:
        await wait_js(page, "!!document.getElementById('status')", "console page loaded")
        for tool, text, target, expected in LINK_CASES:
            got = await page.js(
                "(async () => { const m = await import('/console/links.js');"
                " const known = new Set(['sess-e']);"
                f" const o = {{target: {json.dumps(target)}, known}};"
                f" const {{fragment, refs}} = m.renderAnswer({json.dumps(tool)},"
                f" {json.dumps(text)}, o);"
                " const div = document.createElement('div'); div.append(fragment);"
                " return {text: div.textContent, links: [...div.querySelectorAll('a')].map(a =>"
                " [a.dataset.session, a.dataset.seq === undefined ? null : Number(a.dataset.seq),"
                " a.textContent, a.getAttribute('href')])}; })()"
            )
            assert got["text"] == text, tool
            assert [(s, q) for s, q, _, _ in got["links"]] == expected, tool
            for session, seq, shown, href in got["links"]:
                assert shown in (session, f"seq {seq}", str(seq)), (tool, shown)
                assert href == f"#/s/{session}" + ("" if seq is None else f"/e/{seq}")


async def test_a_session_shown_twice_at_once_still_gets_its_lineage(tmp_path: Path) -> None:
    """Two routes to the same session before its lineage answered (a hash change while the
    first route ran: a click racing the page's own start) must not drop that answer: the
    second route asks nothing new, so the first answer is the one to show."""
    async with hostile_console(tmp_path) as page:
        await page.js(
            "location.hash = '#/s/victim';"
            " window.dispatchEvent(new HashChangeEvent('hashchange')); true"
        )
        _, trace = await wait_answer(page, "trace-output", what="trace", session="victim")
        assert f"- {HOSTILE_ID} — " in trace
