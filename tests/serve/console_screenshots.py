"""The README's console screenshots, taken in headless Chromium over the demo corpus
``make run`` serves (24 sessions, seed 7):

    .venv/bin/python -m tests.serve.console_screenshots --out docs/images

writes ``console-transcript.png`` (a session read as a conversation: a tool call opened,
its subagent linked), ``console-palette.png`` (the search palette, matches marked),
``console-picker.png`` (choosing whom to read as), ``console-model.png`` (the model view:
lineage and events as the tools answer them), ``console-playground.png`` and
``console-usage.png`` (the caller's workspace by day and by agent). The demo's
Chinese titles need a CJK font on the machine (Debian: ``fonts-wqy-zenhei``).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from tests.fixtures.serve import running_embedded
from worker.devtools.demo_corpus import write_demo_corpus

from .chromium import chromium, click, run_and_wait, screenshot, wait_answer, wait_js

WIDTH, HEIGHT = 1360, 900
NAMES = ("transcript", "palette", "picker", "model", "playground", "usage")


async def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"console-{name}.png" for name in NAMES]
    with tempfile.TemporaryDirectory(prefix="sessionq-shots-") as tmp:
        work = Path(tmp)
        demo = write_demo_corpus(work / "sessions", 24, seed=7)
        parent = demo.find("pay-idempotency")
        async with (
            running_embedded(demo.root, work / "data") as (_, base, __),
            chromium(f"{base}/?caller={parent.id}#/s/{parent.id}", work / "profile") as page,
        ):
            await wait_js(
                page,
                "(document.getElementById('transcript') || {dataset: {}}).dataset.state === 'ok'",
                "transcript",
            )
            await page.js(
                "(() => { const d = document.querySelector('#transcript details.tool');"
                " d.open = true; window.scrollTo(0, 0); return true; })()"
            )
            await screenshot(page, paths[0], WIDTH, HEIGHT)
            await click(page, "#palette-open")
            await page.js(
                "(() => { const q = document.getElementById('palette-query');"
                " q.value = 'idempotency key'; q.dispatchEvent(new Event('input'));"
                " return true; })()"
            )
            await wait_js(
                page,
                "document.getElementById('palette-results').dataset.state === 'ok'",
                "palette hits",
            )
            await screenshot(page, paths[1], WIDTH, HEIGHT)
            await page.js("document.getElementById('palette').close(); true")
            await click(page, "#caller-button")
            await wait_js(page, "document.getElementById('caller-dialog').open", "picker")
            await screenshot(page, paths[2], WIDTH, HEIGHT)
            await page.js("document.getElementById('caller-dialog').close(); true")
            await page.js(f"location.hash = '#/s/{parent.id}/model'; true")
            await wait_answer(page, "trace-output", what="lineage", session=parent.id)
            await wait_answer(page, "events-output", what="events", session=parent.id)
            await screenshot(page, paths[3], WIDTH, HEIGHT)
            await click(page, "#tab-playground")
            await wait_js(page, "!document.getElementById('view-playground').hidden", "playground")
            state, _ = await run_and_wait(page)
            assert state == "ok", "the default query answers"
            await screenshot(page, paths[4], WIDTH, HEIGHT)
            await click(page, "#tab-usage")
            await wait_js(page, "document.getElementById('usage').dataset.state === 'ok'", "usage")
            await screenshot(page, paths[5], WIDTH, HEIGHT)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    for path in asyncio.run(take(parser.parse_args().out)):
        print(path)


if __name__ == "__main__":
    main()
