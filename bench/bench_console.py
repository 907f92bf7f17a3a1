"""How fast the console opens a long session: a 10,000-event dsh session read in headless
Chromium, beside the console's model view of the same session in the same run.

The session (``long``) is 500 turns of what dsh writes: a user prompt with code, streamed
deltas, an assistant message with reasoning, Markdown and a tool call, the call's event
and its result, the turn and step markers — 20 events a turn. ``serve`` watches it.

Measured per cold load of the page (a fresh navigation, ``--loads`` times, median):

* **conversation**: navigation start to the first frame after the transcript's first
  page is in the DOM (``#transcript`` turns ``data-state=ok``; the page reads one page
  of 200 events, whatever the session's length);
* **model view** (baseline, the console's session view before the reader): navigation
  start until its lineage (``session_trace``) and first events (``session_event_read``)
  are shown;
* **next page**: a scroll to the end until the next page's blocks are in (median of 10);
* server side, ``GET /v1/transcript``: one page, and the whole session page after page
  (what a reader without pages would wait for before its first paint).

The times come from the page itself: a script added by the DevTools protocol before the
console loads records ``performance.now()`` when an answer settles (CSP does not apply to
it; the product has no hook for it).

Run: ``.venv/bin/python -m bench.bench_console [--events 10000] [--loads 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_store import machine
from tests.builders import BASE_TIME, header, plain, user
from tests.fixtures.serve import running_embedded
from tests.indexer.test_record_path import write_log
from tests.reader.test_reader_api import tool_call, tool_result
from tests.serve.chromium import DevTools, chromium, wait_js
from worker.devtools.demo_corpus.layout import session_path

MARKS = """
window.__marks = {};
new MutationObserver((changes) => {
  for (const c of changes) {
    const el = c.target;
    const settled = el.dataset.state === 'ok' || el.dataset.state === 'error';
    if (el.id && settled && !(el.id in window.__marks)) {
      window.__marks[el.id + ':dom'] = performance.now();
      requestAnimationFrame(() => { window.__marks[el.id] = performance.now(); });
    }
  }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-state']});
"""


def turn(seq: int, t: int) -> list[dict[str, Any]]:
    """One turn of 20 events from ``seq`` (turn ``t``)."""
    at = BASE_TIME + seq * 500
    code = f"```python\ndef handler_{t}(x):\n    return x / 0\n```"
    prompt = f"Turn {t}: why does `handler_{t}` fail?\n\n{code}"
    deltas = [
        f"Looking at handler_{t}: ",
        "the division ",
        "by zero ",
        "raises. ",
        "I will fix it ",
    ]
    answer = "".join(deltas) + f"and **test** it.\n\n- step one\n- step two for {t}"
    call_id = f"call-{t}"
    events: list[dict[str, Any]] = [
        plain(seq, "turn/start", {"turn": t}),
        plain(seq + 1, "step/start", {"turn": t, "step": 1}),
        user(seq + 2, prompt, time=at, msg_id=f"u-{t}"),
    ]
    events += [
        plain(
            seq + 3 + i,
            "assistant/chunk",
            {"turn": t, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": d}},
        )
        for i, d in enumerate(deltas * 2)
    ]
    events.append(
        {
            "type": "assistant/message",
            "seq": seq + 13,
            "time": at + 100,
            "data": {
                "turn": t,
                "step": 1,
                "usage": {"inputTokens": 1200 + t, "outputTokens": 80},
                "message": {
                    "role": "assistant",
                    "id": f"a-{t}",
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                    "content": [
                        {"type": "reasoning", "text": f"think about {t}"},
                        {"type": "text", "text": answer},
                        {
                            "type": "tool-call",
                            "id": call_id,
                            "name": "bash",
                            "arguments": json.dumps({"cmd": f"pytest -k h{t}"}),
                        },
                    ],
                },
            },
            "surfaceOp": "append",
        }
    )
    events.append(tool_call(seq + 14, call_id, "bash", json.dumps({"cmd": f"pytest -k h{t}"})))
    result = tool_result(seq + 15, call_id, "\n".join(f"test_{t}_{i} PASSED" for i in range(12)))
    events.append(result)
    events += [
        plain(seq + 16, "step/end", {"turn": t, "step": 1}),
        plain(seq + 17, "todo/write", {"todos": [{"content": f"fix {t}", "status": "completed"}]}),
        plain(seq + 18, "request/context", {"provider": "p", "model": "m"}),
        plain(seq + 19, "turn/end", {"turn": t, "reason": {"kind": "completed"}}),
    ]
    return events


def session(events: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in range(events // 20):
        out += turn(len(out), t + 1)
    return out


async def marks(page: DevTools, *ids: str) -> dict[str, float]:
    cond = " && ".join(f"window.__marks && ({json.dumps(i)} in window.__marks)" for i in ids)
    await wait_js(page, cond, f"marks {ids}")
    found: dict[str, float] = await page.js("window.__marks")
    return found


async def load(page: DevTools, url: str, *ids: str) -> float:
    await page.send("Page.navigate", {"url": url})
    await asyncio.sleep(0.05)
    found = await marks(page, *ids)
    return max(found[i] for i in ids)


async def run(events: int, loads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sessionq-bench-console-") as tmp:
        work = Path(tmp)
        write_log(
            work / "root" / session_path("/ws", "long"), header("long", cwd="/ws"), session(events)
        )
        async with running_embedded(work / "root", work / "data") as (_, base, http):
            # server side: one page, and every page
            url = f"{base}/v1/transcript?caller=long&session=long"
            one, whole = [], []
            for _ in range(loads):
                t0 = time.perf_counter()
                async with http.get(f"{url}&from=0&limit=200") as resp:
                    assert resp.status == 200
                    await resp.read()
                one.append((time.perf_counter() - t0) * 1000)
                t0, first = time.perf_counter(), 0
                while first is not None:
                    async with http.get(f"{url}&from={first}&limit=500") as resp:
                        first = (await resp.json())["next"]
                whole.append((time.perf_counter() - t0) * 1000)
            async with chromium(f"{base}/v1/status", work / "profile") as page:
                await page.send("Page.enable")
                await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": MARKS})
                conversation, model = [], []
                for i in range(loads):
                    conversation.append(
                        await load(page, f"{base}/?caller=long&n={i}#/s/long", "transcript")
                    )
                    model.append(
                        await load(
                            page,
                            f"{base}/?caller=long&n={i}#/s/long/model",
                            "trace-output",
                            "events-output",
                        )
                    )
                await load(page, f"{base}/?caller=long#/s/long", "transcript")
                pages = []
                count = "document.querySelectorAll('#transcript .block').length"
                for _ in range(10):
                    if await page.js("document.getElementById('transcript').dataset.next") == "":
                        break
                    before = await page.js(count)
                    t0 = time.perf_counter()
                    await page.js(
                        "document.getElementById('transcript-end').scrollIntoView(); true"
                    )
                    await wait_js(page, f"{count} > {before}", "the next page")
                    pages.append((time.perf_counter() - t0) * 1000)
    med = statistics.median
    return {
        "events": events,
        "conversation_first_paint_ms": round(med(conversation), 1),
        "model_view_ms": round(med(model), 1),
        "next_page_ms": round(med(pages), 1),
        "api_one_page_ms": round(med(one), 1),
        "api_whole_session_ms": round(med(whole), 1),
        "loads": loads,
        "machine": machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=7)
    args = parser.parse_args()
    result = asyncio.run(run(args.events, args.loads))
    print(json.dumps(result, indent=2))
    print(
        f"\n{args.events:,}-event session, median of {args.loads} cold loads "
        f"({os.cpu_count()} CPUs):\n"
        f"  conversation, first paint    {result['conversation_first_paint_ms']:8.1f} ms"
        "  (target ≤ 300)\n"
        f"  model view (baseline)        {result['model_view_ms']:8.1f} ms\n"
        f"  next page on scroll          {result['next_page_ms']:8.1f} ms\n"
        f"  API: one page of 200 events  {result['api_one_page_ms']:8.1f} ms\n"
        f"  API: the whole session       {result['api_whole_session_ms']:8.1f} ms"
        "  (a reader without pages)"
    )


if __name__ == "__main__":
    main()
