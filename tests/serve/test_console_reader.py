"""The console as a session reader, in a real headless Chromium: a session reads as a
conversation (messages rendered, tools and thinking folded, every block's seq one click
from its event read), subagents are followed and back, a search lands on its event (from
the palette, by keyboard, and from the search view with its matches marked), the caller
is picked from a list, a session exports as Markdown, long sessions load page by page,
and hostile log text stays inert."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import BASE_TIME, assistant, header, user
from tests.fixtures.serve import Served, call_body, running_embedded
from tests.indexer.test_record_path import write_log
from tests.reader.test_reader_api import TOKEN, hostile_log
from worker.devtools.demo_corpus.layout import session_path

from .chromium import (
    CTRL,
    DevTools,
    chromium,
    chromium_binary,
    click,
    press,
    type_text,
    wait_answer,
    wait_js,
)

READY = "(document.getElementById('transcript') || {dataset: {}}).dataset"


async def transcript_of(page: DevTools, session: str) -> None:
    await wait_js(
        page,
        f"{READY}.state === 'ok' && {READY}.session === {json.dumps(session)}",
        f"the conversation of {session}",
    )


async def test_a_session_reads_as_a_conversation(served: Served, tmp_path: Path) -> None:
    chromium_binary()
    idem = served.summary.find("pay-idempotency")
    child = next(s for s in served.summary.subagents if s.parent == idem.id)
    async with chromium(f"{served.base}/?caller={idem.id}#/s/{idem.id}", tmp_path / "p") as page:
        await transcript_of(page, idem.id)
        shown = await page.js("document.getElementById('transcript').innerText")
        # read as a conversation: no JSON, no tool text, nothing but what was said
        assert '"type":' not in shown and "(no semantic text)" not in shown
        assert await page.js("document.querySelectorAll('#transcript article.user').length") >= 1
        first_user = await page.js(
            "document.querySelector('#transcript article.user .md').textContent"
        )
        assert first_user.startswith("线上发现支付宝异步回调偶尔会重复入账")
        # tools and thinking folded; a click opens one: its input and its output
        closed = await page.js(
            "[...document.querySelectorAll('#transcript details')].every(d => !d.open)"
        )
        assert closed is True
        await click(page, "#transcript details.tool summary")
        opened = await page.js(
            "(() => { const d = document.querySelector('#transcript details.tool');"
            " return {open: d.open,"
            " io: [...d.querySelectorAll('.io-label')].map(l => l.textContent),"
            " status: d.querySelector('.status').textContent}; })()"
        )
        assert opened["open"] is True and opened["status"] == "done"
        assert opened["io"][0] == "Input" and opened["io"][1].startswith("Output #")
        # every block's seq is one click from its exact session_event_read
        seq = await page.js("document.querySelector('#transcript article.user').dataset.seq")
        await click(page, f"#transcript article.user a.seq[href$='/e/{seq}']")
        _, events = await wait_answer(page, "events-output", what="event", seq=seq)
        assert f"Target event seq {seq}:" in events
        assert await page.js("document.getElementById('model-section').hidden") is False
        assert await page.js("document.getElementById('transcript-section').hidden") is True

        # a subagent from the call that started it, and back through its parent link
        await page.js(f"location.hash = '#/s/{idem.id}'; true")
        await transcript_of(page, idem.id)
        await click(page, f"#transcript a.child-link[data-session='{child.id}']")
        await transcript_of(page, child.id)
        assert await page.js("document.getElementById('detail-title').textContent") == child.title
        await click(page, f"#transcript-facts a.parent-link[data-session='{idem.id}']")
        await transcript_of(page, idem.id)


async def test_a_search_lands_on_its_event(served: Served, tmp_path: Path) -> None:
    chromium_binary()
    idem = served.summary.find("pay-idempotency")
    async with chromium(f"{served.base}/?caller={idem.id}", tmp_path / "p") as page:
        await transcript_of(page, idem.id)
        # the palette, by keyboard only
        await press(page, "k", CTRL)
        await wait_js(page, "document.getElementById('palette').open", "the palette")
        await type_text(page, "idempotency key")
        await wait_js(
            page,
            "document.getElementById('palette-results').dataset.state === 'ok'"
            " && document.querySelectorAll('#palette-results [role=option]').length > 1",
            "palette hits",
        )
        marked = await page.js(
            "[...document.querySelectorAll('#palette-results mark')].map(m => m.textContent)"
        )
        assert marked and all(m.lower() in ("idempotency", "key") for m in marked), marked
        await press(page, "ArrowDown")
        chosen = await page.js(
            "document.querySelector('#palette-results [aria-selected=true] a').getAttribute('href')"
        )
        assert chosen == await page.js(
            "document.querySelectorAll('#palette-results [role=option] a')[1].getAttribute('href')"
        )
        await press(page, "Enter")
        await wait_js(page, f"location.hash === {json.dumps(chosen)}", "the chosen hit")
        assert await page.js("document.getElementById('palette').open") is False
        target, seq = chosen.split("/")[2], int(chosen.split("/")[4])
        await transcript_of(page, target)
        await wait_js(page, f"{READY}.landed !== undefined", "landed")
        landed = await page.js(
            "(() => { const b = document.querySelector('#transcript .landed');"
            " const r = b.getBoundingClientRect();"
            " return {seq: +b.dataset.seq,"
            " last: +(b.dataset.last ?? b.dataset.result ?? b.dataset.seq),"
            " visible: r.bottom > 0 && r.top < innerHeight}; })()"
        )
        assert landed["seq"] <= seq <= max(landed["last"], landed["seq"]) and landed["visible"]

        # the search view: matches marked, the text still the tool's, the hit lands
        await page.js("location.hash = '#/search/webhook'; true")
        _, found = await wait_answer(page, "search-output", what="search", query="webhook")
        reply = await served.call(call_body("session_search", {"query": "webhook"}, idem.id))
        assert found == reply["text"]  # the marks wrap the text, they change none of it
        assert int(await page.js("document.getElementById('search-output').dataset.marks")) > 0
        href = await page.js(
            "document.querySelector('#search-output a[data-seq]').getAttribute('href')"
        )
        assert "/t/" in href
        await click(page, "#search-output a[data-seq]")
        await wait_js(page, f"{READY}.landed !== undefined", "landed from the search view")


async def test_the_caller_is_picked_from_a_list(served: Served, tmp_path: Path) -> None:
    chromium_binary()
    shop = served.summary.find("shop-cart-rounding")
    async with chromium(f"{served.base}/", tmp_path / "p") as page:
        await wait_js(page, f"{READY}.state === 'ok'", "the default conversation")
        await click(page, "#caller-button")
        await wait_js(page, "document.getElementById('caller-dialog').open", "the picker")
        await type_text(page, shop.cwd)
        listed = await page.js(
            "[...document.querySelectorAll('#caller-list .caller-choice')].map(b => b.dataset.id)"
        )
        workspace = {s.id for s in served.summary.sessions if s.cwd == shop.cwd}
        assert listed and set(listed) <= workspace
        await press(page, "Enter")
        await wait_js(page, f"location.search.includes({json.dumps(listed[0])})", "picked")
        await transcript_of(page, listed[0])
        assert await page.js("document.getElementById('caller-dialog').open") is False


async def test_a_session_exports_as_markdown(served: Served, tmp_path: Path) -> None:
    chromium_binary()
    idem = served.summary.find("pay-idempotency")
    child = next(s for s in served.summary.subagents if s.parent == idem.id)
    async with chromium(f"{served.base}/?caller={idem.id}", tmp_path / "p") as page:
        await transcript_of(page, idem.id)
        await click(page, "#export-subtree")
        await wait_js(
            page, "document.getElementById('export-output').dataset.state === 'ok'", "export"
        )
        text = await page.js("document.getElementById('export-output').textContent")
        assert text.startswith(f"# {idem.title}\n") and f"- Session: `{child.id}`" in text
        assert (await page.js("document.getElementById('export-download').href")).startswith(
            "blob:"
        )


async def test_a_long_session_loads_page_by_page(tmp_path: Path) -> None:
    chromium_binary()
    events = []
    for i in range(0, 1200, 2):
        events += [user(i, f"question {i}"), assistant(i + 1, f"answer **{i + 1}**")]
    write_log(tmp_path / "root" / session_path("/ws", "long"), header("long", cwd="/ws"), events)
    async with (
        running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, __),
        chromium(f"{base}/?caller=long", tmp_path / "p") as page,
    ):
        await transcript_of(page, "long")
        count = "document.querySelectorAll('#transcript .block').length"
        assert await page.js(count) == 200  # one page: the first paint needs no more
        assert await page.js("document.querySelector('#transcript strong').textContent") == "1"
        for pages in (2, 3):
            await page.js("document.getElementById('transcript-end').scrollIntoView(); true")
            await wait_js(page, f"{count} === {200 * pages}", f"page {pages}")
        # landing deep in: the events before it are a click away
        await page.js("location.hash = '#/s/long/t/1100'; true")
        await wait_js(page, f"{READY}.landed === '1100'", "landed at 1100")
        assert await page.js(f"{READY}.first") == "1070"
        await click(page, "#transcript-earlier")
        await wait_js(page, f"{READY}.first === '870'", "earlier events")
        assert await page.js("document.querySelector('#transcript .block').dataset.seq") == "870"


async def test_hostile_log_text_is_inert_in_the_conversation(tmp_path: Path) -> None:
    chromium_binary()
    hostile_log(tmp_path / "root")
    huge = "<img src=x onerror=window.__pwned=5>" + "A" * 1_500_000
    write_log(
        tmp_path / "root" / session_path("/ws", "huge"),
        header("huge", cwd="/ws", created_at=BASE_TIME + 1),
        [user(0, huge), assistant(1, "[x](javascript:window.__pwned=6) <b id=bold>b</b>")],
    )
    async with (
        running_embedded(tmp_path / "root", tmp_path / "data") as (_, base, __),
        chromium(f"{base}/?caller=leaky#/s/leaky", tmp_path / "p") as page,
    ):
        await transcript_of(page, "leaky")
        html = await page.js("document.body.innerHTML")
        assert TOKEN not in html and TOKEN[:20] not in html
        await page.js("location.hash = '#/s/huge'; true")
        await transcript_of(page, "huge")
        for link in await page.js(
            "[...document.querySelectorAll('#transcript a')].map(a => a.href)"
        ):
            assert not link.startswith("javascript:"), link
        assert await page.js("typeof window.__pwned") == "undefined"
        assert (
            await page.js("document.querySelectorAll('#transcript img, #transcript b').length") == 0
        )
        assert await page.js("document.scripts.length") == 1
        # the megabyte line is shown cut, as text, in one block
        shown = await page.js("document.querySelector('#transcript article.user').textContent")
        assert "<img src=x onerror=window.__pwned=5>" in shown and "more characters" in shown


async def test_usage_counts_the_callers_workspace_by_day_and_agent(
    served: Served, tmp_path: Path
) -> None:
    """The usage view counts what ``/v1/sessions`` lists for the caller, and nothing of
    another workspace."""
    chromium_binary()
    idem = served.summary.find("pay-idempotency")
    listed = await served.get_json(f"/v1/sessions?caller={idem.id}")
    expected: dict[str, list[int]] = {}
    for s in listed:
        row = expected.setdefault(s["source_agent"] or "dsh", [0, 0, 0])
        row[0] += 1
        row[1] += s["parent"] is not None
        row[2] += s["last_seq"] + 1
    assert any(row[1] for row in expected.values())  # subagents among them
    mine = [s for s in served.summary.sessions if s.cwd == idem.cwd]
    assert len(mine) < len(served.summary.sessions)  # other workspaces are not counted
    assert len(listed) == len(mine)
    assert sum(row[2] for row in expected.values()) == sum(s.events for s in mine)

    async with chromium(f"{served.base}/?caller={idem.id}#/", tmp_path / "p") as page:
        loaded = "(document.getElementById('caller') || {dataset: {}}).dataset.loaded > 0"
        await wait_js(page, loaded, "the caller's sessions")
        await click(page, "#tab-usage")
        await wait_js(
            page,
            f"document.getElementById('usage').dataset.sessions === '{len(listed)}'",
            "the usage view",
        )
        rows = await page.js(
            "[...document.querySelectorAll('#usage-agents tr')].map(tr =>"
            " [...tr.children].slice(0, 4).map(c => c.textContent))"
        )
        shown = {r[0]: [int(x.replace(",", "")) for x in r[1:]] for r in rows}
        assert shown == expected
        days = await page.js(
            "[...document.querySelectorAll('#usage-days tr')].map(tr =>"
            " Number(tr.children[1].textContent.replace(/,/g, '')))"
        )
        assert sum(days) == len(listed) and all(n > 0 for n in days)
        assert "#/usage" in await page.js("location.hash")
        scope = await page.js("document.getElementById('usage-scope').textContent")
        assert idem.cwd in scope
