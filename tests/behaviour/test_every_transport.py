"""One behaviour suite for every transport: the same calls, the same sessions, the same
answers — error codes and messages, deadlines, cancels — whether a call comes in process
(``Pipeline.answer``), over HTTP (``sessionq serve``'s ``POST /v1/call``), over MCP (a real
``sessionq mcp`` driven by the SDK's client) or over Kafka (a real broker, indexer and
worker). Each transport is only a way in; the pipeline decides, once.

A transport runs the scenarios it has the means for: every one answers the error cases;
a deadline needs ``min_seq`` (read-your-writes: a call that waits for its caller's log),
which MCP has no way to ask for; a cancel needs a cancel of the host's own (a token in
process, a cancel record over Kafka; HTTP has none, and an MCP call cannot be made to
wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from indexer.logs.watch import WatchRoot
from tests.builders import first_step, header, user
from tests.fixtures.kafka import KafkaCase
from tests.fixtures.serve import running_embedded
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import create_topics, running_stack
from tests.mcp.stdio import stdio_session
from worker.calls.tool_call import ToolCall
from worker.contract.deadline import CancelToken
from worker.local_service import LocalService
from worker.tools.access import Caller
from worker.transports.mcp.server import ERROR_META_KEY

WS: Final = "/behaviour/ws"
CALLER: Final = header("b-caller", cwd=WS)
PEER: Final = header("b-peer", cwd=WS)
FOREIGN: Final = header("b-foreign", cwd="/behaviour/elsewhere")
SESSIONS: Final = (
    (CALLER, first_step("the caller asks about the lighthouse")),
    (PEER, first_step("the peer remembers a lighthouse")),
    (FOREIGN, [user(0, "a lighthouse in another workspace")]),
)
TRANSPORTS: Final = (
    "in-process",
    "http",
    "mcp",
    pytest.param("kafka", marks=pytest.mark.kafka),  # needs the broker the session starts
)
REASON: Final = {"code": "X_CANCEL", "message": "stop now"}


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply as every transport can show it: the error's code and message (None: the
    call succeeded) and the text."""

    code: str | None
    message: str | None
    text: str | None = None


Call = Callable[..., Awaitable[Answer]]


@dataclass
class Way:
    """One transport into the same sessions: ``call(tool, arguments, timeout_ms=None,
    min_seq=None)``; ``cancellable(tool, arguments)`` starts a call that waits for
    ``min_seq`` and returns it with the means to cancel it (None: no such means)."""

    name: str
    call: Call
    cancellable: Callable[..., Awaitable[tuple[asyncio.Task[Answer], Callable[..., Any]]]] | None


def write_logs(root: Path) -> Path:
    """The sessions as dsh logs, one file each."""
    root.mkdir(parents=True, exist_ok=True)
    for head, events in SESSIONS:
        lines = [json.dumps(head), *(json.dumps(e) for e in events)]
        (root / f"{head['id']}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@contextlib.asynccontextmanager
async def in_process(tmp: Path) -> AsyncIterator[Way]:
    local = LocalService(tmp / "data", [WatchRoot(write_logs(tmp / "logs"))], role="serve")
    local.start()
    assert await local.wait_ready(60), "the first pass did not finish"

    def tool_call(tool: str, arguments: Any, timeout_ms: Any, min_seq: Any) -> ToolCall:
        caller = Caller(CALLER["id"])
        return ToolCall(
            str(uuid.uuid4()), tool, arguments, caller, min_seq=min_seq, timeout_ms=timeout_ms
        )

    async def call(
        tool: str, arguments: Any, timeout_ms: Any = None, min_seq: Any = None
    ) -> Answer:
        reply = await local.pipeline.answer(tool_call(tool, arguments, timeout_ms, min_seq))
        error = reply.error
        return Answer(*((error.code, error.message) if error else (None, None)), reply.output)

    async def cancellable(tool: str, arguments: Any) -> tuple[asyncio.Task[Answer], Any]:
        token = CancelToken()

        async def run() -> Answer:
            call = tool_call(tool, arguments, 20_000, 99)
            reply = await local.pipeline.answer(call, token=token)
            assert reply.error is not None
            return Answer(reply.error.code, reply.error.message)

        def in_flight() -> float:
            return local.metrics.registry.get_sample_value("sessionq_in_flight_calls") or 0.0

        before = in_flight()
        task = asyncio.ensure_future(run())
        await wait_until(
            lambda: in_flight() > before or task.done(),
            timeout=30,
            what="the pipeline to start the call",
        )
        return task, token.cancel

    try:
        yield Way("in-process", call, cancellable)
    finally:
        await local.stop()
        local.close()


@contextlib.asynccontextmanager
async def over_http(tmp: Path) -> AsyncIterator[Way]:
    async with running_embedded(write_logs(tmp / "logs"), tmp / "data") as (_, base, http):

        async def call(
            tool: str, arguments: Any, timeout_ms: Any = None, min_seq: Any = None
        ) -> Answer:
            caller: dict[str, Any] = {"session_id": CALLER["id"]}
            if min_seq is not None:
                caller["min_seq"] = min_seq
            body: dict[str, Any] = {"tool": tool, "arguments": arguments, "caller": caller}
            if timeout_ms is not None:
                body["timeout_ms"] = timeout_ms
            async with http.post(f"{base}/v1/call", json=body) as resp:
                assert resp.status == 200, await resp.text()
                reply = await resp.json()
            error = reply.get("error") or {}
            return Answer(error.get("code"), error.get("message"), reply.get("text"))

        yield Way("http", call, None)


@contextlib.asynccontextmanager
async def over_mcp(tmp: Path) -> AsyncIterator[Way]:
    logs, data = write_logs(tmp / "logs"), tmp / "data"
    args = ("--data", str(data), "--sessions", str(logs), "--caller", CALLER["id"])
    async with stdio_session(*args) as session:

        async def call(
            tool: str, arguments: Any, timeout_ms: Any = None, min_seq: Any = None
        ) -> Answer:
            assert min_seq is None, "MCP has no min_seq"
            meta = None if timeout_ms is None else {"sessionq/timeout_ms": timeout_ms}
            result = await session.call_tool(tool, arguments, meta=meta)
            text = result.content[0].text if result.content else None  # type: ignore[union-attr]
            if not result.is_error:
                return Answer(None, None, text)
            error = (result.meta or {})[ERROR_META_KEY]
            return Answer(error["code"], error["message"], text)

        yield Way("mcp", call, None)


@contextlib.asynccontextmanager
async def over_kafka(kafka_case: KafkaCase) -> AsyncIterator[Way]:
    bootstrap, topic_factory, unique_name, tmp = kafka_case.parts()
    topics = await create_topics(bootstrap, topic_factory, events=1, requests=2)
    async with running_stack(topics, tmp / "data", unique_name("group")) as stack:
        for head, events in SESSIONS:
            await stack.publish_session(head, events)
        await stack.indexed()

        async def call(
            tool: str, arguments: Any, timeout_ms: Any = None, min_seq: Any = None
        ) -> Answer:
            reply = await stack.client.call(
                tool,
                arguments,
                session_id=CALLER["id"],
                min_seq=min_seq,
                timeout_ms=timeout_ms or 30_000,
                routing_key=WS,
            )
            error = reply.error
            return Answer(*((error.code, error.message) if error else (None, None)), reply.text)

        async def cancellable(tool: str, arguments: Any) -> tuple[asyncio.Task[Answer], Any]:
            rid = str(uuid.uuid4())
            before = stack.metric("sessionq_in_flight_calls")
            reply = asyncio.ensure_future(
                stack.client.call(
                    tool,
                    arguments,
                    session_id=CALLER["id"],
                    min_seq=99,
                    timeout_ms=20_000,
                    routing_key=WS,
                    request_id=rid,
                )
            )

            async def answer() -> Answer:
                done = await reply
                assert done.error is not None
                return Answer(done.error.code, done.error.message)

            async def cancel(reason: Any) -> None:
                await stack.client.cancel(rid, reason, routing_key=WS.encode())

            await wait_until(
                lambda: stack.metric("sessionq_in_flight_calls") > before or reply.done(),
                timeout=30,
                what="the worker to start the call",
            )
            return asyncio.ensure_future(answer()), cancel

        yield Way("kafka", call, cancellable)


Opener = Callable[[], contextlib.AbstractAsyncContextManager[Way]]


@pytest.fixture(params=TRANSPORTS)
def way(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """The transport, opened by the test itself (``async with way() as w``): the MCP
    client's task group must end in the task that began it."""
    name: str = request.param
    if name == "kafka":
        case: KafkaCase = request.getfixturevalue("kafka_case")
        return lambda: over_kafka(case)
    opener = {"in-process": in_process, "http": over_http, "mcp": over_mcp}[name]
    return lambda: opener(tmp_path)


# ---- error codes: the one closed set, the same messages -------------------------------------
ERRORS: Final = [
    pytest.param(
        "session_event_read",
        {"seq": "x"},
        "INVALID_ARGS",
        'invalid arguments: "seq" must be an integer',
        id="invalid-arguments",
    ),
    pytest.param(
        "session_trace",
        {"session_id": FOREIGN["id"]},
        "SESSION_QUERY_TOOL_UNAUTHORIZED",
        "session target is outside the caller workspace",
        id="a-foreign-target",
    ),
    pytest.param(
        "session_event_read",
        {"session_id": PEER["id"], "seq": 99},
        "SESSION_QUERY_EVENT_NOT_FOUND",
        "session event was not found",
        id="no-such-event",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "code", "message"), ERRORS)
async def test_an_error_is_the_same_code_and_message_on_every_transport(
    way: Opener, tool: str, arguments: Any, code: str, message: str
) -> None:
    async with way() as w:
        answer = await w.call(tool, arguments)
    assert (answer.code, answer.message) == (code, message), w.name


async def test_a_call_answers_the_same_text_on_every_transport(way: Opener) -> None:
    async with way() as w:
        answer = await w.call("session_search", {"query": "lighthouse"})
    assert answer.code is None, answer
    assert answer.text is not None
    assert PEER["id"] in answer.text and FOREIGN["id"] not in answer.text, answer.text


# ---- deadlines: the transports that can make a call wait (min_seq) ----------------------
@pytest.mark.parametrize("way", [*TRANSPORTS[:2], TRANSPORTS[3]], indirect=True)
async def test_a_call_past_its_deadline_is_tool_timeout_on_every_transport(way: Opener) -> None:
    async with way() as w:
        answer = await w.call("session_event_read", {"seq": 0}, timeout_ms=1000, min_seq=99)
    assert (answer.code, answer.message) == ("TOOL_TIMEOUT", "tool call timed out after 1000ms")


# ---- cancels: the transports with a cancel of the host's own ----------------------------
@pytest.mark.parametrize("way", [TRANSPORTS[0], TRANSPORTS[3]], indirect=True)
@pytest.mark.parametrize(
    ("reason", "code", "message"),
    [
        (REASON, "X_CANCEL", "stop now"),
        ("user pressed escape", "TOOL_CANCELLED", "tool call was cancelled"),
    ],
    ids=["code-and-message", "any-other-reason"],
)
async def test_a_cancelled_call_answers_its_reason_on_every_transport(
    way: Opener, reason: Any, code: str, message: str
) -> None:
    async with way() as w:
        assert w.cancellable is not None
        # In flight once this returns: waiting for a min_seq its caller's log never reaches.
        task, cancel = await w.cancellable("session_event_search", {"query": "lighthouse"})
        assert not task.done()
        done = cancel(reason)
        if asyncio.iscoroutine(done):
            await done
        answer = await asyncio.wait_for(task, 30)
    assert (answer.code, answer.message) == (code, message)
