"""The round-trip property on generated logs of every imported format: whatever a
conversation holds (prompts, answers, thinking, tool calls and their results, in any
order), every stored event is readable through the read path, every prompt, answer,
tool-call and tool-result text is in some event's searchable text, and thinking is in
none."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Final

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.logs.importers import LogSource, discover_sources
from indexer.query.service import StoreQueryService
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from indexer.surface.text import extract_text
from tests.importers.agent_logs import KINDS, WRITERS, Turn

_WORD: Final = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[str, list[Turn]]:
    fmt = draw(st.sampled_from(sorted(WRITERS)))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
    turns = [(kind, f"{draw(_WORD)} marker{i}x {draw(_WORD)}") for i, kind in enumerate(kinds)]
    return fmt, turns


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_every_generated_log_reads_back_whole_and_searchable(case: tuple[str, list[Turn]]) -> None:
    fmt, turns = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "logs"
        WRITERS[fmt](root, turns, "7e57a000-0000-4000-8000-000000000001")
        sources = discover_sources([root])
        assert [s.format for s in sources] == [fmt]
        store = Store(Path(tmp) / "data")
        try:
            summary = ingest_files(store, [LogSource(s.path, s.format) for s in sources])
        finally:
            store.close()
        assert summary.rejected == [] and summary.sessions == 1
        service = StoreQueryService(Path(tmp) / "data")
        try:
            (sid,) = [r.header.id for r in service.filter_sessions([])]
            texts = []
            for record in service.list_events(sid):
                window = service.read_event(sid, record.seq)  # the read path's shape check
                texts.append(extract_text(window.target.type, window.target.data))
        finally:
            service.close()
        searchable = "\n".join(texts)
        for kind, text in turns:
            assert (text in searchable) == (kind != "thinking"), (fmt, kind, text, texts)
