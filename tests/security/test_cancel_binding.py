"""Cancels bound to their request (issue 9, part 4): with authenticated callers, a cancel
is honoured only when it carries the request's own principal (host key, caller session,
workspace); a foreign, forged or unsigned cancel never stops a call, in flight or early."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.security.test_caller_auth import host
from tests.security.test_cancels import WAIT_S, NeverIndexed, cancelled, in_flight
from worker.authn.binding import Binding
from worker.authn.keyring import Keyring
from worker.authn.tokens import CallerAuthenticator, CallerSigner
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.tools.access import Caller


def authenticated(tmp_path: Path) -> tuple[Pipeline, CallerSigner, CallerSigner]:
    owner, entry_a = host(tmp_path, "owner", ["/work"])
    other, entry_b = host(tmp_path, "other", ["/work"])
    (tmp_path / "k.json").write_text(json.dumps({"keys": [entry_a, entry_b]}))
    auth = CallerAuthenticator(Keyring(tmp_path / "k.json"))
    return Pipeline(NeverIndexed(), wait_for_caller=True, authenticator=auth), owner, other  # type: ignore[arg-type]


def request(rid: str, session: str) -> dict[str, Any]:
    return {
        "v": 1, "kind": "request", "id": rid, "reply_to": "sessionq.replies",
        "tool": "session_trace", "arguments": {}, "caller": {"session_id": session},
        "timeout_ms": 30_000,
    }


def call(signer: CallerSigner, rid: str, session: str = "caller") -> ToolCall:
    return ToolCall(
        rid, "session_trace", {}, Caller(session), timeout_ms=30_000,
        token=signer.sign(request(rid, session), "/work/app"),
        binding=Binding(request(rid, session)),
    )


def cancel(
    signer: CallerSigner, rid: str, reason: Any, session: str = "caller", ws: str = "/work/app",
    *, signed_id: str | None = None,
) -> dict[str, Any]:
    """The caller fields of a cancel record (``pipeline.cancel`` keywords), signed by
    ``signer`` for ``signed_id`` (default: ``rid``)."""
    envelope = {"v": 1, "kind": "cancel", "id": rid, "reason": reason,
                "caller": {"session_id": session}}
    signed = {**envelope, "id": signed_id or rid}
    return {"session_id": session, "token": signer.sign(signed, ws),
            "binding": Binding(envelope)}


async def test_only_the_requests_own_principal_cancels_it(tmp_path: Path) -> None:
    pipeline, owner, other = authenticated(tmp_path)
    task = asyncio.create_task(pipeline.answer(call(owner, "r1")))
    await in_flight(pipeline, "r1", 1)
    foreign: list[dict[str, Any]] = [
        {},  # no caller, no token
        {"session_id": "caller"},  # unsigned
        {"session_id": "caller", "token": "forged.token.value"},
        cancel(other, "r1", "stop"),  # other host
        cancel(owner, "r1", "stop", session="intruder"),
        cancel(owner, "r1", "stop", ws="/work/other"),
        cancel(owner, "r1", "stop", signed_id="r2"),  # signed for another id
        {"session_id": "caller", "token": owner.sign(request("r1", "caller"), "/work/app"),
         "binding": Binding({"v": 1, "kind": "cancel", "id": "r1", "reason": "stop",
                             "caller": {"session_id": "caller"}})},  # the request's token
        {**cancel(owner, "r1", "other reason"),
         "binding": Binding({"v": 1, "kind": "cancel", "id": "r1", "reason": "stop",
                             "caller": {"session_id": "caller"}})},  # another reason
    ]
    for ref in foreign:
        assert pipeline.cancel("r1", "stop", **ref) == 0, ref
    await asyncio.sleep(0.05)
    assert not task.done()
    assert pipeline.cancel("r1", "mine", **cancel(owner, "r1", "mine")) == 1
    reply = await asyncio.wait_for(task, WAIT_S)
    assert cancelled(reply) and reply.cancel_reason == "mine"


async def test_an_early_cancel_counts_only_for_its_own_principal(tmp_path: Path) -> None:
    pipeline, owner, other = authenticated(tmp_path)
    # a foreign early cancel is remembered under its principal but never applies
    pipeline.cancel("r1", "x", **cancel(other, "r1", "x"))
    pipeline.cancel("r1", "y", session_id="caller")  # unsigned: not even remembered
    task = asyncio.create_task(pipeline.answer(call(owner, "r1")))
    await in_flight(pipeline, "r1", 1)
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    # the owner's early cancel does apply
    pipeline.cancel("r2", "z", **cancel(owner, "r2", "z"))
    reply = await asyncio.wait_for(pipeline.answer(call(owner, "r2")), WAIT_S)
    assert cancelled(reply) and reply.cancel_reason == "z"


async def test_without_authentication_any_cancel_counts() -> None:
    pipeline = Pipeline(NeverIndexed(), wait_for_caller=True)  # type: ignore[arg-type]
    task = asyncio.create_task(
        pipeline.answer(ToolCall("r1", "session_trace", {}, Caller("caller"), timeout_ms=30_000))
    )
    await in_flight(pipeline, "r1", 1)
    assert pipeline.cancel("r1", "stop") == 1
    assert cancelled(await asyncio.wait_for(task, WAIT_S))
