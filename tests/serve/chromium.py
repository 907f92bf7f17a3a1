"""A real headless Chromium for the console tests, driven over the DevTools protocol:
launched with the flags this machine needs (no sandbox, no GPU, no background traffic),
its page reached through ``/json/list``, every wait a condition polled with a deadline."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fixtures.serve import eventually

CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
START_TIMEOUT = 30.0
UI_TIMEOUT = 10.0


def chromium_binary() -> str:
    for candidate in (*CHROMIUM_PATHS, shutil.which("chromium") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip(
        "Chromium not found (/usr/bin/chromium); install Debian's chromium package "
        "(apt-get install chromium) to run the console browser test"
    )


class DevTools:
    """A minimal Chrome DevTools Protocol client over one page websocket."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        call_id = next(self.ids)
        message = {"id": call_id, "method": method, "params": params or {}}
        await self.ws.send_str(json.dumps(message))
        while True:
            msg = await asyncio.wait_for(self.ws.receive(), timeout=UI_TIMEOUT)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise AssertionError(f"DevTools connection closed: {msg.type}")
            data = json.loads(msg.data)
            if data.get("id") == call_id:
                if "error" in data:
                    raise AssertionError(f"{method} failed: {data['error']}")
                result: dict[str, Any] = data["result"]
                return result

    async def js(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")


LAUNCH_TIMEOUT = 15.0
LAUNCHES = 2


def _launch(binary: str, url: str, profile: Path) -> subprocess.Popen[bytes]:
    profile.mkdir()
    with (profile.parent / f"{profile.name}.stderr").open("wb") as stderr:
        return _popen(binary, url, profile, stderr)


def _popen(binary: str, url: str, profile: Path, stderr: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            binary, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--no-default-browser-check", "--disable-dev-shm-usage",
            f"--user-data-dir={profile}", "--remote-debugging-port=0",
            "--window-size=1280,900", url,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,
    )  # fmt: skip


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


async def _devtools_port(proc: subprocess.Popen[bytes], port_file: Path) -> int:
    async def probe() -> int | None:
        if proc.poll() is not None:
            raise AssertionError(f"chromium exited with {proc.returncode}")
        lines = port_file.read_text().split() if port_file.is_file() else []
        return int(lines[0]) if lines else None

    port: int = await eventually(probe, timeout=LAUNCH_TIMEOUT, what="DevTools port")
    return port


async def _started(binary: str, url: str, profile: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A Chromium and its DevTools port. Chromium starts in well under a second here, but
    a launch that hangs before it writes its port (seen once in a full run under load) is
    the browser's, not the console's: it is stopped and started once more on a fresh
    profile; a second failure reports Chromium's own output."""
    for attempt in range(1, LAUNCHES + 1):
        run_profile = profile if attempt == 1 else profile.with_name(f"{profile.name}-{attempt}")
        proc = _launch(binary, url, run_profile)
        try:
            port = await _devtools_port(proc, run_profile / "DevToolsActivePort")
        except AssertionError:
            _stop(proc)
            if attempt == LAUNCHES:
                log = run_profile.parent / f"{run_profile.name}.stderr"
                tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
                raise AssertionError(
                    f"chromium wrote no DevTools port in {LAUNCHES} launches; stderr:\n{tail}"
                ) from None
            continue
        return proc, port
    raise AssertionError("unreachable")


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}/"


@contextlib.asynccontextmanager
async def chromium(url: str, profile: Path) -> AsyncIterator[DevTools]:
    """A Chromium showing ``url``; its page is found by origin (the console rewrites its
    own address: the token leaves it, a chosen caller enters it)."""
    origin = _origin(url)
    proc, port = await _started(chromium_binary(), url, profile)
    try:
        async with aiohttp.ClientSession() as http:

            async def page_ws() -> str | None:
                async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                    targets = await resp.json()
                for t in targets:
                    if t.get("type") == "page" and t.get("url", "").startswith(origin):
                        return str(t["webSocketDebuggerUrl"])
                return None

            ws_url = await eventually(page_ws, timeout=START_TIMEOUT, what="console page target")
            async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                yield DevTools(ws)
    finally:
        _stop(proc)


async def wait_js(page: DevTools, expression: str, what: str) -> Any:
    async def probe() -> Any:
        return await page.js(expression)

    return await eventually(probe, timeout=UI_TIMEOUT, what=what)


async def set_value(page: DevTools, element_id: str, value: str, event: str) -> None:
    await page.js(
        f"(() => {{ const el = document.getElementById({json.dumps(element_id)});"
        f" el.value = {json.dumps(value)};"
        f" el.dispatchEvent(new Event({json.dumps(event)}, {{bubbles: true}}));"
        f" return el.value; }})()"
    )


async def run_and_wait(page: DevTools) -> tuple[str, str]:
    await page.js("document.getElementById('output').dataset.state = 'submitted'")
    await page.js("document.getElementById('run').click()")
    state = await wait_js(
        page,
        "(() => { const s = document.getElementById('output').dataset.state;"
        " return s === 'ok' || s === 'error' ? s : null; })()",
        "call result",
    )
    text = await page.js("document.getElementById('output').textContent")
    return str(state), str(text)


async def click(page: DevTools, selector: str) -> None:
    """Click the first element matching ``selector`` (it must exist)."""
    found = await page.js(
        f"(() => {{ const el = document.querySelector({json.dumps(selector)});"
        f" if (!el) return false; el.click(); return true; }})()"
    )
    assert found, f"nothing matches {selector}"


async def wait_answer(
    page: DevTools, element_id: str, *, what: str, **dataset: str
) -> tuple[str, str]:
    """Wait until the answer ``element_id`` settled (``data-state`` ok or error) with the
    given ``data-*`` values; returns (state, textContent)."""
    checks = " && ".join(
        f"el.dataset[{json.dumps(k)}] === {json.dumps(v)}" for k, v in dataset.items()
    )
    state = await wait_js(
        page,
        f"(() => {{ const el = document.getElementById({json.dumps(element_id)});"
        f" const s = el.dataset.state; if (s !== 'ok' && s !== 'error') return null;"
        f" return ({checks or 'true'}) ? s : null; }})()",
        what,
    )
    text = await page.js(f"document.getElementById({json.dumps(element_id)}).textContent")
    return str(state), str(text)


async def screenshot(page: DevTools, path: Path, width: int = 1280, height: int = 860) -> bytes:
    """A PNG of the page at ``width`` x ``height`` CSS pixels, written to ``path``."""
    await page.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    shot = await page.send("Page.captureScreenshot", {"format": "png"})
    png = base64.b64decode(shot["data"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    path.write_bytes(png)
    return png


KEYS = {
    "Enter": ("Enter", 13, "\r"),
    "Escape": ("Escape", 27, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowUp": ("ArrowUp", 38, ""),
    "k": ("KeyK", 75, "k"),
    "/": ("Slash", 191, "/"),
}
CTRL = 2


async def press(page: DevTools, key: str, modifiers: int = 0) -> None:
    """A trusted key press (``Input.dispatchKeyEvent``), as a keyboard makes it."""
    code, vk, text = KEYS[key]
    down: dict[str, Any] = {
        "type": "keyDown" if text and not modifiers else "rawKeyDown",
        "key": key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "modifiers": modifiers,
    }
    if text and not modifiers:
        down["text"] = text
    await page.send("Input.dispatchKeyEvent", down)
    await page.send(
        "Input.dispatchKeyEvent",
        {
            "type": "keyUp",
            "key": key,
            "code": code,
            "windowsVirtualKeyCode": vk,
            "modifiers": modifiers,
        },
    )


async def type_text(page: DevTools, text: str) -> None:
    """Text typed into the focused field (``Input.insertText``: one input event)."""
    await page.send("Input.insertText", {"text": text})
