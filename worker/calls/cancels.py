"""Cancel records and the calls they may stop.

A cancel reaches every in-flight copy of its request id (a redelivered request can run
twice). When callers are authenticated, a cancel is honoured only when it carries the
same principal (host key, caller session, workspace) as the request it names: anyone
else's cancel is ignored. A cancel that overtakes its request is remembered, bounded by
count and bytes; reasons are bounded before they are kept or echoed.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

import orjson

from worker.authn.principal import Principal
from worker.contract.deadline import CancelToken

CANCEL_REASON_MAX_BYTES: Final = 1024
"""A cancel reason is kept (and echoed in the reply) only up to this many bytes of JSON."""
OVERSIZED_REASON: Final = "[cancel reason omitted: over 1024 bytes of JSON]"
"""What a non-string reason over ``CANCEL_REASON_MAX_BYTES`` (or one that is not JSON)
becomes."""
EARLY_CANCELS: Final = 1_000
"""At most this many cancels whose request has not arrived (yet) are remembered..."""
EARLY_CANCEL_BYTES: Final = 1024 * 1024
"""...and at most this many bytes of them (ids as UTF-8, reasons as JSON); oldest go first."""


def bounded_reason(reason: Any) -> Any:
    """A cancel reason as the pipeline keeps and echoes it: unchanged (the same object)
    when its JSON is at most ``CANCEL_REASON_MAX_BYTES``; a longer string is cut to its
    longest prefix that, followed by ``…``, fits in that many bytes of JSON; any other
    reason over the limit, or one that is not JSON at all, becomes ``OVERSIZED_REASON``
    (so it no longer carries a ``code``/``message``: the reply says ``TOOL_CANCELLED``)."""
    size = _json_size(reason)
    if size is not None and size <= CANCEL_REASON_MAX_BYTES:
        return reason
    if size is None or not isinstance(reason, str):
        return OVERSIZED_REASON
    lo, hi = 0, min(len(reason), CANCEL_REASON_MAX_BYTES)  # a character is >= 1 byte
    while lo < hi:  # the JSON size of a prefix grows with its length
        mid = (lo + hi + 1) // 2
        cut = _json_size(reason[:mid] + "…")
        if cut is not None and cut <= CANCEL_REASON_MAX_BYTES:
            lo = mid
        else:
            hi = mid - 1
    return reason[:lo] + "…"


def _json_size(value: Any) -> int | None:
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return None


class EarlyCancels:
    """Cancels that overtook their request, bounded by count (``EARLY_CANCELS``) and by
    size (``EARLY_CANCEL_BYTES``: an entry weighs its id's UTF-8 bytes plus its reason's
    JSON bytes); the oldest are evicted first. Reasons must be bounded already."""

    def __init__(self, max_entries: int = EARLY_CANCELS, max_bytes: int = EARLY_CANCEL_BYTES):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[str, tuple[Any, Principal | None, int]] = OrderedDict()

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, request_id: str, reason: Any, owner: Principal | None = None) -> None:
        """Remember (or renew, as the newest) the cancel of ``request_id`` by ``owner``."""
        if request_id in self._entries:
            self.pop(request_id)
        size = len(request_id.encode("utf-8", "surrogatepass")) + (_json_size(reason) or 0)
        self._entries[request_id] = (reason, owner, size)
        self.bytes += size
        while self._entries and (
            len(self._entries) > self.max_entries or self.bytes > self.max_bytes
        ):
            _, (_, _, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted

    def pop(self, request_id: str) -> Any:
        """The remembered reason, forgotten (``KeyError`` when there is none)."""
        return self.take(request_id)[0]

    def take(self, request_id: str) -> tuple[Any, Principal | None]:
        """The remembered (reason, owner), forgotten (``KeyError`` when there is none)."""
        reason, owner, size = self._entries.pop(request_id)
        self.bytes -= size
        return reason, owner


class InFlight:
    """The calls in flight by request id, each with the principal that sent it.

    ``bound``: cancels must come from the request's own principal (an authenticating
    pipeline); otherwise (embedded, in-process, ``--insecure-unauthenticated-callers``)
    every cancel for an id counts, as before callers were authenticated.
    """

    def __init__(self, *, bound: bool) -> None:
        self.bound = bound
        self.early = EarlyCancels()
        self._calls: dict[str, list[tuple[CancelToken, Principal | None]]] = {}

    def _owns(self, request_owner: Principal | None, cancel_owner: Principal | None) -> bool:
        return not self.bound or (cancel_owner is not None and cancel_owner == request_owner)

    def start(self, request_id: str, token: CancelToken, owner: Principal | None) -> None:
        """Track a call; a remembered cancel of its id by its owner cancels it at once."""
        self._calls.setdefault(request_id, []).append((token, owner))
        if request_id in self.early:
            reason, cancel_owner = self.early.take(request_id)
            if self._owns(owner, cancel_owner):
                token.cancel(reason)

    def finish(self, request_id: str, token: CancelToken) -> None:
        """Forget exactly this in-flight copy of ``request_id``."""
        calls = [c for c in self._calls.get(request_id, ()) if c[0] is not token]
        if calls:
            self._calls[request_id] = calls
        else:
            self._calls.pop(request_id, None)

    def cancel(self, request_id: str, reason: Any, owner: Principal | None) -> int:
        """Cancel every copy ``owner`` may cancel; returns how many. With no copy in
        flight the cancel is remembered for the request that may still come."""
        reason = bounded_reason(reason)
        calls = self._calls.get(request_id)
        if not calls:
            if owner is not None or not self.bound:
                self.early.add(request_id, reason, owner)
            return 0
        stopped = 0
        for token, request_owner in calls:
            if self._owns(request_owner, owner):
                token.cancel(reason)
                stopped += 1
        return stopped
