"""Connection attempts to a broker that is gone back off exponentially, and the role says
once that the broker went and once that it is back.

aiokafka retries a failed connection on every pass of its loops (metadata, coordinator,
fetcher: each sleeps ``retry_backoff_ms``, 100 ms, between passes) and has no
reconnect backoff of its own, so with the broker stopped every role opened dozens of
connections a second, for ever. ``backed_off`` wraps one client's connection getter
(aiokafka has no hook for it): after a node's failed attempt the next one waits
``BASE_S``, doubling per failure up to ``CAP_S`` (with jitter, so the clients of many
hosts do not retry in step); within the wait the getter answers "no connection" without
trying, as a failed attempt does, and aiokafka's loops go on as they would. The first
connection that succeeds again resets the node's wait.

Whether a broker answers is a fact about this process's network, shared by all its
clients, so the reachability of each bootstrap address is kept once per process
(``_REACHABILITY``): the first failure after a success logs one WARNING, the first
success after a failure one INFO, whichever client meets it. Nothing else is kept
between clients.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from aiokafka.client import AIOKafkaClient

log = logging.getLogger("sessionq.kafka")

BASE_S: Final = 0.1  # the wait after a node's first failed attempt
CAP_S: Final = 8.0  # the longest wait between two attempts (a broker back is met within it)
JITTER: Final = 0.2  # a wait is drawn from [1 - JITTER, 1] times its nominal length
SETTLE_S: Final = 1.0  # successes this soon after going down are connections from before

T = TypeVar("T")


@dataclass
class _Node:
    failures: int = 0
    next_at: float = 0.0  # monotonic time before which no attempt is made


class Reachability:
    """Whether the broker at ``where`` answered this process's latest attempt.

    A success within ``SETTLE_S`` of going down is no comeback: aiokafka hands back a
    connection it opened before the broker went (still open for a moment), so the role
    would say "reachable again" and "unreachable" once more in the same millisecond. The
    broker is back at the first success after that."""

    def __init__(self, where: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.where = where
        self.down = False
        self._down_at = 0.0
        self._clock = clock

    def failed(self) -> None:
        if not self.down:
            self.down = True
            self._down_at = self._clock()
            log.warning(
                "Kafka at %s is unreachable: retrying with backoff (at most %g s apart)",
                self.where,
                CAP_S,
            )

    def reached(self) -> None:
        if self.down and self._clock() - self._down_at >= SETTLE_S:
            self.down = False
            log.info("Kafka at %s is reachable again", self.where)


_REACHABILITY: dict[str, Reachability] = {}


def reachability(where: str) -> Reachability:
    """The process's one ``Reachability`` of the bootstrap address ``where``."""
    return _REACHABILITY.setdefault(where, Reachability(where))


def wait_after(failures: int, draw: float) -> float:
    """Seconds before the next attempt after ``failures`` failed ones in a row (``draw``
    in [0, 1) picks the jitter)."""
    nominal: float = min(CAP_S, BASE_S * 2.0 ** min(failures - 1, 32))
    return nominal * (1.0 - JITTER * draw)


def backed_off(owner: T, where: str) -> T:
    """``owner`` (an aiokafka consumer, producer or admin client, not started yet) with
    its connection attempts backed off (module docstring); ``where`` names the broker
    (the bootstrap address) in the log."""
    client = getattr(owner, "_client", None) or getattr(owner, "client", None)
    if not isinstance(client, AIOKafkaClient):
        raise TypeError(f"{type(owner).__name__} holds no aiokafka client")
    attempt = client._get_conn
    nodes: dict[Any, _Node] = {}
    reach = reachability(where)

    async def get_conn(node_id: Any, **kwargs: Any) -> Any:
        node = nodes.setdefault(node_id, _Node())
        if time.monotonic() < node.next_at:
            return None  # within the wait: what a failed attempt answers, untried
        conn = await attempt(node_id, **kwargs)
        if conn is None:
            node.failures += 1
            node.next_at = time.monotonic() + wait_after(node.failures, random.random())
            reach.failed()
        else:
            node.failures, node.next_at = 0, 0.0
            reach.reached()
        return conn

    client._get_conn = get_conn
    return owner
