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
from worker.authn.keyring import Keyring
from worker.authn.tokens import CallerAuthenticator, CallerSigner
from worker.pipeline import Pipeline, ToolCall
from worker.tools.access import Caller


def authenticated(tmp_path: Path) -> tuple[Pipeline, CallerSigner, CallerSigner]:
    owner, entry_a = host(tmp_path, "owner", ["/work"])
    other, entry_b = host(tmp_path, "other", ["/work"])
    (tmp_path / "k.json").write_text(json.dumps({"keys": [entry_a, entry_b]}))
    auth = CallerAuthenticator(Keyring(tmp_path / "k.json"))
    return Pipeline(NeverIndexed(), wait_for_caller=True, authenticator=auth), owner, other  # type: ignore[arg-type]


def call(signer: CallerSigner, rid: str, session: str = "caller") -> ToolCall:
    return ToolCall(
        rid, "session_trace", {}, Caller(session), timeout_ms=30_000,
        token=signer.token(rid, session, "/work/app"),
    )


async def test_only_the_requests_own_principal_cancels_it(tmp_path: Path) -> None:
    pipeline, owner, other = authenticated(tmp_path)
    task = asyncio.create_task(pipeline.answer(call(owner, "r1")))
    await in_flight(pipeline, "r1", 1)
    foreign: list[dict[str, Any]] = [
        {},  # no caller, no token
        {"session_id": "caller"},  # unsigned
        {"session_id": "caller", "token": "forged.token.value"},
        {"session_id": "caller", "token": other.token("r1", "caller", "/work/app")},  # other host
        {"session_id": "intruder", "token": owner.token("r1", "intruder", "/work/app")},
        {"session_id": "caller", "token": owner.token("r1", "caller", "/work/other")},  # ws
        {"session_id": "caller", "token": owner.token("r2", "caller", "/work/app")},  # other id
    ]
    for ref in foreign:
        assert pipeline.cancel("r1", "stop", **ref) == 0, ref
    await asyncio.sleep(0.05)
    assert not task.done()
    assert pipeline.cancel(
        "r1", "mine", session_id="caller", token=owner.token("r1", "caller", "/work/app")
    ) == 1
    reply = await asyncio.wait_for(task, WAIT_S)
    assert cancelled(reply) and reply.cancel_reason == "mine"


async def test_an_early_cancel_counts_only_for_its_own_principal(tmp_path: Path) -> None:
    pipeline, owner, other = authenticated(tmp_path)
    # a foreign early cancel is remembered under its principal but never applies
    pipeline.cancel("r1", "x", session_id="caller", token=other.token("r1", "caller", "/work/app"))
    pipeline.cancel("r1", "y", session_id="caller")  # unsigned: not even remembered
    task = asyncio.create_task(pipeline.answer(call(owner, "r1")))
    await in_flight(pipeline, "r1", 1)
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    # the owner's early cancel does apply
    pipeline.cancel("r2", "z", session_id="caller", token=owner.token("r2", "caller", "/work/app"))
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
