"""The README's console screenshots, taken in headless Chromium over the demo corpus
``make run`` serves (24 sessions, seed 7):

    .venv/bin/python -m tests.serve.console_screenshots --out docs/images

writes ``console-browse.png`` (a session with a subagent child: its facts, lineage and
first events) and ``console-playground.png`` (the default query run). The demo's Chinese
titles need a CJK font on the machine (Debian: ``fonts-wqy-zenhei``).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from worker.devtools.demo_corpus import write_demo_corpus

from .chromium import chromium, click, run_and_wait, screenshot, wait_answer, wait_js
from .conftest import running_embedded

WIDTH, HEIGHT = 1360, 900


async def take(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sessionq-shots-") as tmp:
        work = Path(tmp)
        demo = write_demo_corpus(work / "sessions", 24, seed=7)
        parent = demo.find("pay-idempotency")
        async with (
            running_embedded(demo.root, work / "data") as (_, base, __),
            chromium(f"{base}/#/s/{parent.id}", work / "profile") as page,
        ):
            await wait_js(page, "!!document.getElementById('caller')", "console page loaded")
            await wait_answer(page, "trace-output", what="lineage", session=parent.id)
            await wait_answer(page, "events-output", what="events", session=parent.id)
            browse = await screenshot(page, out / "console-browse.png", WIDTH, HEIGHT)
            await click(page, "#tab-playground")
            await wait_js(page, "!document.getElementById('view-playground').hidden", "playground")
            state, _ = await run_and_wait(page)
            assert state == "ok", "the default query answers"
            play = await screenshot(page, out / "console-playground.png", WIDTH, HEIGHT)
    assert browse and play
    return [out / "console-browse.png", out / "console-playground.png"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    for path in asyncio.run(take(parser.parse_args().out)):
        print(path)


if __name__ == "__main__":
    main()
