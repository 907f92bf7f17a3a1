"""Collecting search hits up to the result cap (SPEC §9.7, deliberate difference 4).

Upstream walks provider cursors; sessionq's service has no cursors, only a ``limit``
and a ``more`` flag. Asking for ``cap + 1`` hits answers "is there an accepted hit
beyond the cap?" in one read. Only when the service returns hits the tool rejects
(its own session, a foreign workspace — the real store filters both out already)
does the tool ask again with a limit grown by the number of rejected hits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from indexer.errors import ErrorCode
from worker.contract.errors import HarnessError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Collection(Generic[T]):
    """Accepted hits in rank order; ``capped`` when an accepted hit lay beyond the cap."""

    items: list[T]
    capped: bool


def stalled_provider() -> HarnessError:
    """The provider claims more hits but returned fewer than asked: it cannot advance."""
    return HarnessError(
        "session-search provider repeated a continuation cursor", ErrorCode.INVALID_CURSOR
    )


def collect(
    fetch: Callable[[int], tuple[Sequence[T], bool]],
    accept: Callable[[T], bool],
    max_results: int,
) -> Collection[T]:
    """Fetch pages of growing ``limit`` until the cap is exceeded or the hits run out.

    ``fetch(limit)`` returns (hits in rank order, more-hits-exist). ``capped`` is true
    only when an *accepted* hit exists after ``max_results`` accepted ones.
    """
    limit = max_results + 1
    while True:
        items, more = fetch(limit)
        accepted = [item for item in items if accept(item)]
        if len(accepted) > max_results:
            return Collection(accepted[:max_results], True)
        if not more:
            return Collection(accepted, False)
        if len(items) < limit:
            raise stalled_provider()
        limit = len(items) + (max_results + 1 - len(accepted))
