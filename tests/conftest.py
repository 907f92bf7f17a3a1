"""Shared fixtures: real stores built from in-test session logs, and the real corpus."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from indexer.model.records import EventsRecord, HeaderRecord, LifecycleRecord
from indexer.query.service import StoreQueryService
from indexer.store.records.store import Store
from tests.data_paths import CORPUS_DIR

# The Kafka fixtures (one broker per session) for every directory that needs a broker.
pytest_plugins = ("tests.kafka.fixtures",)

# Property tests must not depend on the machine's speed: no per-example deadline and no
# "too slow" health check (a loaded 2-core machine is slow, not wrong).
settings.register_profile(
    "sessionq", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("sessionq")

SessionSpec = tuple[dict[str, Any], Sequence[dict[str, Any]]]
StoreFactory = Callable[..., StoreQueryService]


def build_store(data_dir: Path, sessions: Sequence[SessionSpec], live: Sequence[str] = ()) -> None:
    """Apply each (header, events) pair as records, exactly as the indexer would."""
    store = Store(data_dir)
    try:
        for header, events in sessions:
            store.apply(HeaderRecord(v=1, kind="header", header=dict(header)))
            if events:
                store.apply(
                    EventsRecord(
                        v=1,
                        kind="events",
                        session_id=header["id"],
                        events=[dict(e) for e in events],
                    )
                )
        for sid in live:
            store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id=sid, live=True))
        store.commit()
    finally:
        store.close()


@pytest.fixture
def store_factory(tmp_path: Path) -> Iterator[StoreFactory]:
    """``store_factory(sessions, live=(), read_window_max=50)`` -> a real query service."""
    counter = itertools.count()
    services: list[StoreQueryService] = []

    def make(
        sessions: Sequence[SessionSpec], live: Sequence[str] = (), **kwargs: Any
    ) -> StoreQueryService:
        data_dir = tmp_path / f"store-{next(counter)}"
        build_store(data_dir, sessions, live)
        service = StoreQueryService(data_dir, **kwargs)
        services.append(service)
        return service

    yield make
    for service in services:
        service.close()


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The real dsh corpus checked in under ``tests/data/dsh`` (never skipped: must exist)."""
    assert CORPUS_DIR.is_dir(), f"the real corpus is missing: {CORPUS_DIR}"
    return CORPUS_DIR
