"""Shared ids of the hand-written Claude Code and Codex fixture trees, and a data dir
ingested from both."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

from indexer.logs.importers import discover_sources
from indexer.logs.importers.common import child_session_id
from indexer.query.service import StoreQueryService
from indexer.sources.files import IngestSummary, ingest_files
from indexer.store.records.store import Store
from tests.data_paths import CLAUDE_CODE_DIR, CODEX_DIR
from worker.pipeline import Pipeline
from worker.tools.access import Caller

CLAUDE_PROJECTS: Final = CLAUDE_CODE_DIR / "projects"
CLAUDE_MALFORMED: Final = CLAUDE_CODE_DIR / "malformed"
CODEX_SESSIONS: Final = CODEX_DIR / "sessions"
CODEX_MALFORMED: Final = CODEX_DIR / "malformed"

CC_MAIN: Final = "11111111-1111-4111-8111-111111111111"  # /home/dev/shop
CC_CHILD: Final = child_session_id(CC_MAIN, "a1b2c3d4")  # <session>/subagents/ layout
CC_LEGACY_PARENT: Final = "22222222-2222-4222-8222-222222222222"
CC_LEGACY_CHILD: Final = child_session_id(CC_LEGACY_PARENT, "legacy01")  # agent-*.jsonl beside it
CC_ORPHAN_PARENT: Final = "33333333-3333-4333-8333-333333333333"  # no file of its own
CC_ORPHAN: Final = child_session_id(CC_ORPHAN_PARENT, "orphan01")
CC_OTHER: Final = "44444444-4444-4444-8444-444444444444"  # /home/dev/other
CLAUDE_SESSIONS: Final = {CC_MAIN, CC_CHILD, CC_LEGACY_PARENT, CC_LEGACY_CHILD, CC_ORPHAN, CC_OTHER}

CX_MAIN: Final = "0199a000-0000-7000-8000-000000000001"  # /home/dev/api
CX_CHILD: Final = "0199a000-0000-7000-8000-000000000002"
CX_ORPHAN: Final = "0199a000-0000-7000-8000-000000000003"
CX_ORPHAN_PARENT: Final = "0199a000-0000-7000-8000-0000000000ff"
CODEX_SESSION_IDS: Final = {CX_MAIN, CX_CHILD, CX_ORPHAN}


def ingest(data: Path, *roots: Path) -> IngestSummary:
    store = Store(data)
    try:
        return ingest_files(store, discover_sources(roots))
    finally:
        store.close()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, IngestSummary]]:
    data = tmp_path_factory.mktemp("imported") / "data"
    summary = ingest(data, CLAUDE_PROJECTS, CODEX_SESSIONS)
    yield data, summary


class Tools:
    """In-process tool calls over a data dir (the path ``sessionq call`` takes)."""

    def __init__(self, data: Path) -> None:
        self.service = StoreQueryService(data)
        self.pipeline = Pipeline(self.service)

    async def text(self, tool: str, arguments: Mapping[str, object], caller: str) -> str:
        result = await self.pipeline.call(tool, arguments, Caller(caller))
        assert result.ok, result
        return result.text

    def close(self) -> None:
        self.service.close()


@pytest.fixture
def tools(imported: tuple[Path, IngestSummary]) -> Iterator[Tools]:
    t = Tools(imported[0])
    yield t
    t.close()
