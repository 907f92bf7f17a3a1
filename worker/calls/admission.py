"""Admission of a call, in one place: admit → share → slot → gate, released by one path.

1. **share** (``admit``, step 3 of ``worker.calls.pipeline``, once the call is authenticated):
   its place in its host key's and its workspace's share (``worker.calls.slots.Shares``; the
   verified workspace, else the routing key, else the caller session), held until the
   call is answered; a call beyond its share is ``SESSION_QUERY_BUSY`` at once.
2. **slot** (``Admitted.running``, step 5): a running slot, overall and per workspace
   (``worker.calls.slots.Slots``), taken only to run — a call still waiting for its caller or
   ``min_seq`` holds none.
3. **gate** (step 5): the caller's execution gate (``worker.calls.execution``): a caller's
   searches one at a time, its reads in parallel.

``Admitted.release`` gives the share back, once, whatever happened; the slot and the gate
are context managers that end with the run. A pipeline without bounds (in-process,
``serve``) admits every call and takes only the gate.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from worker.authn.principal import Principal
from worker.calls.execution import ExecutionGates
from worker.calls.slots import Share, Shares, Slots
from worker.calls.tool_call import ToolCall
from worker.contract.deadline import CancelToken

if TYPE_CHECKING:
    from worker.tools.registry import Tool


def _workspace(call: ToolCall, principal: Principal | None) -> str:
    """The workspace a call counts against: the one its token vouches for, else the
    routing key it was sent under, else its caller session alone."""
    if principal is not None and principal.workspace:
        return principal.workspace
    if principal is None and call.workspace_key:
        return call.workspace_key
    caller = call.caller.session_id if call.caller is not None else ""
    return f"session:{caller}"


class Admission:
    """The bounds of one pipeline (module docstring); None: that bound is not kept."""

    def __init__(self, *, shares: Shares | None = None, slots: Slots | None = None) -> None:
        self.shares = shares
        self.slots = slots
        self.gates = ExecutionGates()

    def admit(self, call: ToolCall, principal: Principal | None) -> Admitted:
        """Step 1: the call's share; raises ``BusyError`` when its host's or its
        workspace's is full."""
        share = None
        if self.shares is not None:
            host = principal.kid if principal is not None else None
            share = self.shares.take(host, _workspace(call, principal))
        return Admitted(self, call, share)


class Admitted:
    """One admitted call: ``running`` for each run of its tool, ``release`` once."""

    __slots__ = ("_admission", "_call", "_share")

    def __init__(self, admission: Admission, call: ToolCall, share: Share | None) -> None:
        self._admission = admission
        self._call = call
        self._share = share

    @contextlib.asynccontextmanager
    async def running(self, tool: Tool[Any], token: CancelToken) -> AsyncIterator[None]:
        """Steps 2 and 3: a running slot, then the caller's gate; both end with the run.
        Waiting for either ends with the call's deadline or cancellation."""
        call, admission = self._call, self._admission
        caller = call.caller.session_id if call.caller is not None else ""
        slot: contextlib.AbstractAsyncContextManager[None] = contextlib.nullcontext()
        if admission.slots is not None:
            slot = admission.slots.hold(call.workspace_key or f"session:{caller}", token)
        async with slot, admission.gates.run(caller, exclusive=tool.exclusive):
            yield

    def release(self) -> None:
        """The share back to its host and workspace (idempotent)."""
        if self._share is not None:
            self._share.release()
            self._share = None
