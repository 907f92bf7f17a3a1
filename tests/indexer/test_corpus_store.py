"""The whole real corpus through the store: counts, read-back, surfaces, lineage, search."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from indexer.errors import INVALID_QUERY, SessionQueryError
from indexer.logs.reader import LogRejectedError, read_log
from indexer.logs.roots import discover
from indexer.model.search import (
    AvailabilityFilter,
    CwdFilter,
    IdFilter,
    ParentFilter,
    SurfaceFilter,
    TypeFilter,
)
from indexer.query.service import StoreQueryService
from indexer.sources.files import IngestSummary, ingest_files
from indexer.store.records.store import Store

COMPACTED = {
    "4d8b12e4-980a-5187-a39c-13f2d3db8cca": (5, 17),
    "dde299fd-4ffb-5ac4-bbde-7d8c0df3400a": (4, 21),
}
PARENT_OF_MANY = "11111111-1111-4111-8111-111111111111"
MISSING_PARENT = "a6a455ac-9d4e-59df-895a-409622a8ca25"


@pytest.fixture(scope="module")
def ingested(
    tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path
) -> tuple[Path, IngestSummary]:
    data = tmp_path_factory.mktemp("corpus-store")
    store = Store(data)
    try:
        summary = ingest_files(store, discover([corpus_dir]))
    finally:
        store.close()
    return data, summary


@pytest.fixture(scope="module")
def service(ingested: tuple[Path, IngestSummary]) -> StoreQueryService:
    return StoreQueryService(ingested[0])


def test_every_valid_log_is_indexed_and_each_invalid_one_rejected_with_its_reason(
    ingested: tuple[Path, IngestSummary],
) -> None:
    _, summary = ingested
    assert (summary.files, summary.sessions, summary.events, summary.documents) == (
        159,
        156,
        15048,
        945,
    )
    reasons = sorted(r.reason.split("/dsh/")[1] for r in summary.rejected)
    assert reasons == [
        "apps__web__cordis-tool-round__session.jsonl:8: "
        "session event seq 87 is not contiguous; expected 6",
        "packages__test-support__acp-snapshot__fixtures__suite__authored-error__session.jsonl:2: "
        "session event seq 1 is not contiguous; expected 0",
        "packages__test-support__acp-snapshot__fixtures__suite__blocked-log__session.jsonl:2: "
        "session event seq 1 is not contiguous; expected 0",
    ]


def test_store_counts_match_the_ingest(
    service: StoreQueryService, ingested: tuple[Path, IngestSummary]
) -> None:
    from indexer.stats import store_stats

    stats = store_stats(ingested[0])
    assert (stats.sessions, stats.events, stats.documents) == (156, 15048, 945)


def test_every_event_reads_back_json_equal_with_key_order(
    service: StoreQueryService, corpus_dir: Path
) -> None:
    checked = 0
    for path in discover([corpus_dir]):
        try:
            log = read_log(path)
        except LogRejectedError:
            continue
        sid = log.header.id
        for start in range(0, len(log.events), 101):
            seq = min(start + 50, len(log.events) - 1)
            window = service.read_event(sid, seq, before=50, after=50)
            for stored in window.events:
                source = log.events[stored.seq]
                assert stored.obj == source.obj
                assert list(stored.obj) == list(source.obj)
                assert orjson.dumps(stored.obj) == orjson.dumps(source.obj)
                checked += 1
    assert checked >= 15048


def test_compaction_logs_classify_shadowed_events(service: StoreQueryService) -> None:
    for sid, (shadowed, replacer) in COMPACTED.items():
        records = service.list_events(sid)
        assert [r.seq for r in records if r.surface == "shadowed"] == [shadowed]
        trace = service.trace_event(sid, shadowed)
        assert trace.replaced_by == replacer and trace.replacement_chain == [replacer]
        assert service.trace_event(sid, replacer).replaced_event_seqs == [shadowed]


def test_subagent_lineage_has_parents_children_and_a_missing_parent(
    service: StoreQueryService,
) -> None:
    parent = service.trace_session(PARENT_OF_MANY)
    assert parent.complete and not parent.ancestors
    assert len(parent.descendants) == 11
    created = [n.session.header.created_at for n in parent.descendants]
    assert created == sorted(created)
    child = parent.descendants[0].session.header.id
    up = service.trace_session(child)
    assert [a.header.id for a in up.ancestors] == [PARENT_OF_MANY]
    assert up.root is not None and up.root.header.id == PARENT_OF_MANY
    orphan = service.trace_session("child-1")
    assert not orphan.complete and orphan.unresolved_parent_id == MISSING_PARENT


def test_search_finds_an_english_phrase_grouped_by_session(service: StoreQueryService) -> None:
    page = service.search_sessions(
        "Reply with exactly the word", [CwdFilter(("/home/dev/acp-agent",))], [], limit=5
    )
    assert len(page.items) == 5 and page.more
    assert all(h.record.header.cwd == "/home/dev/acp-agent" for h in page.items)
    assert len({h.record.header.id for h in page.items}) == 5
    assert all("Reply with exactly the word" in h.best.snippet for h in page.items)


def test_session_filters_follow_spec_semantics(service: StoreQueryService) -> None:
    everything = service.filter_sessions([])
    assert len(everything) == 156
    assert service.filter_sessions([IdFilter(())]) == []
    no_cwd = service.filter_sessions([CwdFilter((None,))])
    assert len(no_cwd) == 8 and all(r.header.cwd is None for r in no_cwd)
    roots = service.filter_sessions([ParentFilter((None,))])
    assert len(roots) == 156 - 30
    kids = service.filter_sessions([ParentFilter((PARENT_OF_MANY, None))])
    assert len(kids) == 156 - 30 + 11
    assert service.filter_sessions([AvailabilityFilter(("live",))]) == []
    assert len(service.filter_sessions([AvailabilityFilter(("persisted",))])) == 156
    created = [r.header.created_at for r in everything]
    assert created == sorted(created, reverse=True)


def test_event_filters_and_empty_lists(service: StoreQueryService) -> None:
    sid = next(iter(COMPACTED))
    hits = service.search_events(sid, "the", [], limit=100).items
    assert hits
    only_shadowed = service.search_events(sid, "the", [SurfaceFilter(("shadowed",))], limit=100)
    assert {h.surface for h in only_shadowed.items} <= {"shadowed"}
    assert service.search_events(sid, "the", [TypeFilter(())], limit=100).items == []


@pytest.mark.parametrize("query", ["", "   ", "a\0b"])
def test_blank_and_nul_queries_are_rejected(service: StoreQueryService, query: str) -> None:
    with pytest.raises(SessionQueryError) as err:
        service.search_sessions(query, [], [], limit=5)
    assert err.value.code == INVALID_QUERY
