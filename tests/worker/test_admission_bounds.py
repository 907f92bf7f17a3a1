"""One setting sizes each admission bound (``worker.calls.admission``): unset, a host key's and
a workspace's share of the admitted calls are a quarter and an eighth of
``max_admitted``, and a workspace's running slots a quarter of ``max_in_flight``; a
bound that is set is taken as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from worker.settings import WorkerSettings


def settings(**given: Any) -> WorkerSettings:
    return WorkerSettings(  # type: ignore[arg-type]
        data=Path("/nonexistent"),
        kafka={"bootstrap": "h:1"},
        insecure_unauthenticated_callers=True,
        **given,
    )


def test_the_shares_follow_max_admitted_unless_set() -> None:
    default = settings()
    assert (default.admitted_per_host, default.admitted_per_workspace) == (256, 128)
    scaled = settings(max_admitted=400, max_in_flight=8)
    assert (scaled.admitted_per_host, scaled.admitted_per_workspace) == (100, 50)
    assert scaled.in_flight_per_workspace == 2
    set_ = settings(max_admitted=400, max_admitted_per_host=7, max_in_flight_per_workspace=3)
    assert (set_.admitted_per_host, set_.admitted_per_workspace) == (7, 50)
    assert set_.in_flight_per_workspace == 3


def test_a_tiny_bound_still_admits_one() -> None:
    tiny = settings(max_admitted=1, max_in_flight=1)
    assert (tiny.admitted_per_host, tiny.admitted_per_workspace) == (1, 1)
    assert tiny.in_flight_per_workspace == 1
