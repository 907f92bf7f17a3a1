"""The embedded HTTP API's access rules (``sessionq serve``): the bearer token of
``--token-file`` on every endpoint but the probes, the refusal to listen beyond loopback
without one, ``/v1/sessions`` answering only for a caller and only with its workspace,
and a too-large body answered in the API's JSON error shape."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from yarl import URL

from tests.fixtures.processes import sessionq
from tests.fixtures.serve import DEMO_SESSIONS, running_embedded
from worker.devtools.demo_corpus import DemoSummary, write_demo_corpus
from worker.transports.http.api import MAX_BODY_BYTES
from worker.webguard.token import TokenFileError, is_loopback, load_token

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cr3t-token-\u00e9-value"  # non-ASCII on purpose: compared as bytes
TOKEN_ASCII = "tok-8f0c2a71d9e44b6f"


@dataclass
class Server:
    base: str
    http: aiohttp.ClientSession
    summary: DemoSummary
    token: str | None

    def auth(self, token: str | None = None) -> dict[str, str]:
        value = self.token if token is None else token
        return {"Authorization": f"Bearer {value}"} if value else {}


@pytest.fixture
def demo(tmp_path: Path) -> DemoSummary:
    return write_demo_corpus(tmp_path / "sessions", DEMO_SESSIONS, seed=7)


@contextlib.asynccontextmanager
async def serving(demo: DemoSummary, data: Path, token: str | None) -> AsyncIterator[Server]:
    async with running_embedded(demo.root, data, token=token) as (_, base, http):
        yield Server(base, http, demo, token)


@pytest.fixture
async def guarded(demo: DemoSummary, tmp_path: Path) -> AsyncIterator[Server]:
    async with serving(demo, tmp_path / "data", TOKEN_ASCII) as server:
        yield server


@pytest.fixture
async def open_server(demo: DemoSummary, tmp_path: Path) -> AsyncIterator[Server]:
    async with serving(demo, tmp_path / "data", None) as server:
        yield server


def a_caller(demo: DemoSummary) -> str:
    return demo.find("pay-webhook-retry").id


def guarded_requests(demo: DemoSummary) -> list[tuple[str, str, Any]]:
    caller = a_caller(demo)
    body = {
        "tool": "session_search",
        "arguments": {"query": "幂等性"},
        "caller": {"session_id": caller},
    }
    return [
        ("POST", "/v1/call", body),
        ("GET", "/v1/manifest", None),
        ("GET", "/v1/status", None),
        ("GET", f"/v1/sessions?caller={quote(caller)}", None),
        ("GET", "/v1/callers", None),
        ("GET", "/", None),
        ("GET", "/metrics", None),
    ]


async def send(
    server: Server, method: str, path: str, body: Any, headers: dict[str, str]
) -> tuple[int, dict[str, str], str]:
    async with server.http.request(
        method, f"{server.base}{path}", json=body, headers=headers
    ) as resp:
        return resp.status, dict(resp.headers), await resp.text()


def assert_unauthenticated(status: int, headers: dict[str, str], text: str) -> None:
    assert status == 401, text
    assert headers.get("WWW-Authenticate") == "Bearer"
    error = json.loads(text)["error"]
    assert error["code"] == "UNAUTHENTICATED"
    assert error["message"]


# ---- the token ----------------------------------------------------------------------------------
async def test_every_endpoint_but_the_probes_needs_the_token(guarded: Server) -> None:
    for method, path, body in guarded_requests(guarded.summary):
        for headers in (
            {},
            guarded.auth("wrong-token"),
            guarded.auth(TOKEN_ASCII + "x"),
            {"Authorization": f"Basic {TOKEN_ASCII}"},
            {"Authorization": "Bearer"},
        ):
            assert_unauthenticated(*await send(guarded, method, path, body, headers))
        status, _, text = await send(guarded, method, path, body, guarded.auth())
        assert status == 200, (path, text)
    for probe in ("/healthz", "/readyz"):
        status, _, text = await send(guarded, "GET", probe, None, {})
        assert status == 200, (probe, text)


async def test_the_console_page_takes_the_token_in_its_url_only(guarded: Server) -> None:
    status, _, page = await send(guarded, "GET", f"/?token={TOKEN_ASCII}", None, {})
    assert status == 200
    assert 'id="token"' in page and "sessionStorage" in page
    assert TOKEN_ASCII not in page
    assert_unauthenticated(*await send(guarded, "GET", "/?token=wrong", None, {}))
    # Only the static page: the API itself never reads a token from the URL.
    assert_unauthenticated(*await send(guarded, "GET", f"/v1/status?token={TOKEN_ASCII}", None, {}))


async def test_the_token_is_in_no_response_and_no_log(
    guarded: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    unknown = {"tool": "session_trace", "arguments": {}, "caller": {"session_id": "nobody"}}
    requests = [
        *guarded_requests(guarded.summary),
        ("POST", "/v1/call", unknown),
        ("POST", "/v1/call", {"tool": "nope"}),
        ("GET", "/v1/sessions", None),
        ("GET", "/v1/sessions?caller=nobody", None),
        ("GET", "/no/such/path", None),
    ]
    for method, path, body in requests:
        for headers in ({}, guarded.auth(), guarded.auth("wrong")):
            status, response_headers, text = await send(guarded, method, path, body, headers)
            seen.append(f"{status} {response_headers} {text}")
    assert seen
    assert not [s for s in seen if TOKEN_ASCII in s]
    assert TOKEN_ASCII not in caplog.text


async def test_the_console_files_are_open_and_hold_no_data(guarded: Server) -> None:
    """A browser loads the page's scripts without its bearer token: they are open, and
    they are the package's static files (no session data, no token)."""
    from worker.transports.http.console_page import ASSETS

    for name in ASSETS:
        status, headers, text = await send(guarded, "GET", f"/console/{name}", None, {})
        assert status == 200, name
        assert TOKEN_ASCII not in text
        assert not [s.id for s in guarded.summary.sessions if s.id in text], name
        assert "script-src 'self'" in headers["Content-Security-Policy"]
    for raw in ("/console/../v1/callers", "/console/app.js/../../v1/callers", "/console/"):
        url = URL(f"{guarded.base}{raw}", encoded=True)  # sent as written, dots and all
        async with guarded.http.get(url) as resp:
            assert resp.status == 401, raw


async def test_a_non_ascii_token_compares_as_bytes(demo: DemoSummary, tmp_path: Path) -> None:
    async with serving(demo, tmp_path / "data", TOKEN) as server:
        status, _, _ = await send(server, "GET", "/v1/manifest", None, server.auth())
        assert status == 200
        assert_unauthenticated(*await send(server, "GET", "/v1/manifest", None, {}))


async def test_without_a_token_the_loopback_api_stays_open(open_server: Server) -> None:
    for method, path, body in guarded_requests(open_server.summary):
        status, _, text = await send(open_server, method, path, body, {})
        assert status == 200, (path, text)


# ---- /v1/sessions: a caller and its workspace only --------------------------------------------
async def sessions_of(server: Server, query: str) -> tuple[int, Any]:
    async with server.http.get(f"{server.base}/v1/sessions{query}", headers=server.auth()) as resp:
        return resp.status, await resp.json()


async def test_sessions_without_a_caller_is_400(guarded: Server) -> None:
    for query in ("", "?caller=", "?step_seq=3"):
        status, body = await sessions_of(guarded, query)
        assert status == 400, query
        assert body["error"]["code"] == "BAD_REQUEST"
        assert "caller" in body["error"]["message"]
    caller = quote(a_caller(guarded.summary))
    for bad in ("-1", "x", "1.5"):
        status, body = await sessions_of(guarded, f"?caller={caller}&step_seq={bad}")
        assert status == 400
        assert "step_seq" in body["error"]["message"]
    status, _ = await sessions_of(guarded, f"?caller={caller}&step_seq=2")
    assert status == 200


async def test_an_unknown_caller_is_404_as_in_the_tools(guarded: Server) -> None:
    status, body = await sessions_of(guarded, "?caller=no-such-session")
    assert status == 404
    assert body == {
        "error": {"code": "SESSION_QUERY_SESSION_NOT_FOUND", "message": "session was not found"}
    }
    call = {"tool": "session_trace", "arguments": {}, "caller": {"session_id": "no-such-session"}}
    async with guarded.http.post(
        f"{guarded.base}/v1/call", json=call, headers=guarded.auth()
    ) as resp:
        reply = await resp.json()
    assert reply["error"] == body["error"]


async def test_a_caller_sees_only_its_workspace(open_server: Server) -> None:
    demo = open_server.summary
    assert len(demo.workspaces) >= 3
    for session in demo.sessions:
        status, listed = await sessions_of(open_server, f"?caller={quote(session.id)}")
        assert status == 200
        got = {s["id"] for s in listed}
        if session.cwd is None:
            expected = {session.id}
        else:
            expected = {s.id for s in demo.sessions if s.cwd == session.cwd}
        assert got == expected, session.scenario
        assert {s["cwd"] for s in listed} == {session.cwd}
        foreign = {s.id for s in demo.sessions} - expected
        assert not foreign & got
        text = json.dumps(listed)
        assert not [f for f in foreign if f in text]


# ---- a too-large body ---------------------------------------------------------------------------
async def test_a_too_large_body_is_413_json(guarded: Server) -> None:
    body = b'{"tool": "session_search", "pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    async with guarded.http.post(
        f"{guarded.base}/v1/call",
        data=body,
        headers={**guarded.auth(), "content-type": "application/json"},
    ) as resp:
        assert resp.status == 413
        error = (await resp.json())["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert str(MAX_BODY_BYTES) in error["message"]
    # Without the token, the body is not read at all: 401 first.
    async with guarded.http.post(
        f"{guarded.base}/v1/call", data=body, headers={"content-type": "application/json"}
    ) as resp:
        assert resp.status == 401


async def test_a_body_over_any_earlier_bound_is_413_json_too(guarded: Server) -> None:
    """Issue 10 item 9: past the body bound the answer was a plain-text 413 (at 4 MiB
    then); every size past the bound gets the JSON error shape."""
    body = b'{"tool": "session_search", "pad": "' + b"x" * (4 * 1024 * 1024 + 1) + b'"}'
    async with guarded.http.post(
        f"{guarded.base}/v1/call",
        data=body,
        headers={**guarded.auth(), "content-type": "application/json"},
    ) as resp:
        assert resp.status == 413 and resp.content_type == "application/json"
        assert (await resp.json())["error"]["code"] == "PAYLOAD_TOO_LARGE"


# ---- start-up rules -----------------------------------------------------------------------------
def test_loopback_addresses() -> None:
    for host in ("127.0.0.1", "127.3.4.5", "::1", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "128.0.0.1"):
        assert not is_loopback(host), host


def test_token_files(tmp_path: Path) -> None:
    good = tmp_path / "token"
    good.write_text(f"  {TOKEN_ASCII}\n", encoding="utf-8")
    assert load_token(good) == TOKEN_ASCII
    empty = tmp_path / "empty"
    empty.write_text(" \n\t\n", encoding="utf-8")
    for path, fragment in (
        (empty, "is empty"),
        (tmp_path / "missing", "cannot read"),
        (tmp_path, "cannot read"),
    ):
        with pytest.raises(TokenFileError, match=fragment) as info:
            load_token(path)
        assert str(path) in str(info.value)


def run_serve(
    tmp_path: Path, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    sessions = tmp_path / "logs"
    sessions.mkdir(exist_ok=True)
    data = tmp_path / "data"
    return sessionq("serve", "--sessions", sessions, "--data", data, *args, env=env_extra)


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "10.1.2.3:8765", "example.com:80"])
def test_serve_refuses_a_non_loopback_listen_without_a_token(tmp_path: Path, listen: str) -> None:
    result = run_serve(tmp_path, "--listen", listen)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sessionq serve: --listen ")
    assert "not a loopback address" in lines[0] and "--token-file" in lines[0]
    assert "serving" not in result.stderr + result.stdout
    assert not (tmp_path / "data").exists()


def test_serve_refuses_an_empty_or_unreadable_token_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty-token"
    empty.write_text("\n", encoding="utf-8")
    for path, fragment in ((empty, "is empty"), (tmp_path / "missing", "cannot read")):
        result = run_serve(tmp_path, "--listen", "0.0.0.0:0", "--token-file", str(path))
        assert result.returncode == 2, result.stderr
        line = result.stderr.strip()
        assert line.startswith("sessionq serve: --token-file / SESSIONQ_TOKEN_FILE: ")
        assert fragment in line and str(path) in line
        assert "\n" not in line


def test_the_token_file_comes_from_the_environment_too(tmp_path: Path) -> None:
    empty = tmp_path / "empty-token"
    empty.write_text("", encoding="utf-8")
    result = run_serve(
        tmp_path, "--listen", "0.0.0.0:0", env_extra={"SESSIONQ_TOKEN_FILE": str(empty)}
    )
    assert result.returncode == 2
    assert "is empty" in result.stderr


# ---- the console with a token, in a real Chromium ----------------------------------------------
async def test_the_console_sends_the_token_it_was_opened_with(
    guarded: Server, tmp_path: Path
) -> None:
    from tests.serve.chromium import (
        chromium,
        chromium_binary,
        run_and_wait,
        set_value,
        wait_js,
    )

    chromium_binary()
    demo = guarded.summary
    caller = demo.find("pay-webhook-retry")
    workspace = [s for s in demo.sessions if s.cwd == caller.cwd]
    url = f"{guarded.base}/?caller={caller.id}&token={TOKEN_ASCII}"
    async with chromium(url, tmp_path / "profile") as page:
        await wait_js(
            page,
            "document.readyState === 'complete' && !!document.getElementById('status')",
            "console page loaded",
        )
        await wait_js(page, "document.getElementById('status').dataset.ready === 'true'", "ready")
        loaded = await wait_js(
            page, "Number(document.getElementById('caller').dataset.loaded || 0) || null", "callers"
        )
        assert loaded == len(workspace)
        # The token left the address bar for this tab's sessionStorage.
        href = await page.js("location.href")
        assert TOKEN_ASCII not in href and f"caller={caller.id}" in href
        assert await page.js("sessionStorage.getItem('sessionq.token')") == TOKEN_ASCII
        await set_value(page, "arguments", '{"query": "幂等性"}', "input")
        state, text = await run_and_wait(page)
        assert state == "ok", text
        assert text.startswith("Session search results (")
        # A wrong token: the call comes back 401 with the API's error shape.
        await set_value(page, "token", "wrong", "change")
        state, text = await run_and_wait(page)
        assert state == "error" and text.startswith("HTTP 401: "), text


def test_the_compose_serve_beyond_loopback_has_a_token_file() -> None:
    from tests.deploy.test_manifests import compose

    serve = compose()["services"]["serve"]
    listen = serve["command"][serve["command"].index("--listen") + 1]
    assert not is_loopback(listen.rpartition(":")[0])
    token_file = serve["environment"]["SESSIONQ_TOKEN_FILE"]
    assert token_file == "/run/secrets/serve-token"
    assert "serve-token" in serve["secrets"]
    assert "serve-token" in compose()["secrets"]


async def test_sessions_masks_a_foreign_parent_as_the_tools_do(tmp_path: Path) -> None:
    """A child whose parent lives in another workspace: ``/v1/sessions`` shows the parent
    as ``session_search`` does (``[outside workspace]``), never its id."""
    from tests.builders import header, user
    from tests.indexer.test_record_path import write_log
    from worker.devtools.demo_corpus.layout import session_path
    from worker.tools.access import Caller

    root = tmp_path / "root"
    for sid, cwd, parent in (
        ("parent-x", "/ws/a", None),
        ("child-y", "/ws/b", "parent-x"),
        ("sib-z", "/ws/b", "child-y"),
    ):
        head = header(sid, cwd=cwd, parent=parent)
        write_log(root / session_path(cwd, sid), head, [user(0, "needle")])
    async with running_embedded(root, tmp_path / "data") as (embedded, base, http):
        async with http.get(f"{base}/v1/sessions?caller=sib-z") as resp:
            assert resp.status == 200
            listed = {s["id"]: s for s in await resp.json()}
        reply = await embedded.pipeline.call("session_search", {"query": "needle"}, Caller("sib-z"))
    assert "Parent: [outside workspace]" in (reply.output or ""), reply.output
    assert listed["child-y"]["parent"] == "[outside workspace]"
    assert listed["sib-z"]["parent"] == "child-y"  # a parent in the workspace is named
    assert "parent-x" not in json.dumps(listed)


# ---- the DNS-rebinding rule (no token) ---------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "attacker.example:8765"}, 421),  # a rebound name
        ({"Host": "attacker.example"}, 421),
        ({"Host": "127.0.0.1.attacker.example"}, 421),
        ({"Origin": "http://attacker.example"}, 403),  # a page elsewhere calling in
        ({"Origin": "null"}, 403),
        ({"Origin": "http://[::1"}, 403),  # malformed: refused, not a 500
        ({"Origin": "http://[evil]"}, 403),
        ({"Host": "localhost:1"}, 200),
        ({"Host": "[::1]:8765"}, 200),
        ({"Origin": "http://localhost:8765"}, 200),
        ({}, 200),
    ],
)
async def test_without_a_token_only_local_names_are_answered(
    open_server: Server, headers: dict[str, str], status: int
) -> None:
    caller = quote(a_caller(open_server.summary))
    async with open_server.http.get(
        f"{open_server.base}/v1/sessions?caller={caller}", headers=headers
    ) as resp:
        assert resp.status == status, await resp.text()
        if status != 200:
            body = await resp.json()
            assert body["error"]["code"] == "FORBIDDEN_HOST"


async def test_callers_and_the_console_files_follow_the_rebinding_rule(
    open_server: Server,
) -> None:
    for path in ("/v1/callers", "/console/app.js", "/"):
        async with open_server.http.get(
            f"{open_server.base}{path}", headers={"Host": "attacker.example:8765"}
        ) as resp:
            assert resp.status == 421, path
            assert (await resp.json())["error"]["code"] == "FORBIDDEN_HOST"


async def test_configured_names_are_answered_too(demo: DemoSummary, tmp_path: Path) -> None:
    from tests.fixtures.serve import embedded_service
    from worker.transports.http.api import HttpApi
    from worker.webguard.origin import allowed_names

    embedded = embedded_service(demo.root, tmp_path / "data")
    api = HttpApi(embedded)
    runner, port = await api.start("127.0.0.1:0", allowed_names("127.0.0.1", ["devbox.lan"]))
    try:
        async with aiohttp.ClientSession() as http:
            for host, status in (("devbox.lan:8765", 200), ("DEVBOX.LAN", 200), ("x.lan", 421)):
                async with http.get(
                    f"http://127.0.0.1:{port}/v1/manifest", headers={"Host": host}
                ) as resp:
                    assert resp.status == status, host
    finally:
        await runner.close()
        embedded.close()


async def test_with_a_token_any_name_is_answered(guarded: Server) -> None:
    async with guarded.http.get(
        f"{guarded.base}/v1/manifest", headers={"Host": "sessionq.internal", **guarded.auth()}
    ) as resp:
        assert resp.status == 200
