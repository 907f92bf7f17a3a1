"""Literal search semantics through the query service on a real store (SPEC §7.3,
deliberate differences 2-3)."""

from __future__ import annotations

import pytest

from indexer.model.search import CwdFilter, SessionFilter, TimeFilter
from indexer.query.service import StoreQueryService
from tests.builders import header, user
from tests.fixtures.stores import StoreFactory

DOCS = {
    "ai": "An AI helper",
    "braid": "BRAID",
    "cafe": "long long long—café,\nnext value",
    "zh": "我们正在测试中文搜索引擎的子串匹配",
    "op": "needle OR absent",
    "plain": "needle here, absent there",
    "quote": 'say "needle" exactly',
    "emoji": "😀😀 alpha beta BRAID 😀😀",
    "ab": "alpha beta",
    "amb": "alpha middle beta",
}


@pytest.fixture
def service(store_factory: StoreFactory) -> StoreQueryService:
    return store_factory([(header(sid), [user(0, text)]) for sid, text in DOCS.items()])


def ids(service: StoreQueryService, query: str) -> list[str]:
    return [h.record.header.id for h in service.search_sessions(query, [], [], limit=50).items]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("AI", ["ai"]),
        ("braid", ["braid", "emoji"]),
        ("CAFE", ["cafe"]),
        ("café", ["cafe"]),
        ("中文搜索", ["zh"]),
        ("搜", ["zh"]),
        ("文引", []),
        ("needle OR absent", ["op"]),
        ('say "needle"', ["quote"]),
        ("*", []),
        ('""', []),
        ("alpha beta", ["ab", "emoji"]),
    ],
)
def test_queries_are_literal_whole_token_phrases(
    service: StoreQueryService, query: str, expected: list[str]
) -> None:
    assert sorted(ids(service, query)) == sorted(expected)


def test_shorter_document_ranks_first_for_the_same_phrase(service: StoreQueryService) -> None:
    assert ids(service, "alpha beta") == ["ab", "emoji"]


def test_snippet_keeps_the_match_and_has_no_newline(store_factory: StoreFactory) -> None:
    text = "We traced the flaky parser test.\n\nThe needle was a stale cache entry. " * 20
    svc = store_factory([(header("s"), [user(0, text)])], snippet_chars=30)
    hit = svc.search_sessions("needle", [], [], limit=1).items[0]
    assert "needle" in hit.best.snippet and "\n" not in hit.best.snippet
    assert len(hit.best.snippet) <= 30


def test_filters_combine_with_the_phrase(store_factory: StoreFactory) -> None:
    svc = store_factory(
        [
            (header("a", cwd="/a"), [user(0, "shared needle", time=10)]),
            (header("b", cwd="/b"), [user(0, "shared needle", time=20)]),
            (header("n", cwd=None), [user(0, "shared needle", time=30)]),
        ]
    )

    def q(*filters: SessionFilter) -> list[str]:
        return [
            h.record.header.id
            for h in svc.search_sessions("needle", list(filters), [], limit=9).items
        ]

    assert q(CwdFilter(("/a",))) == ["a"]
    assert q(CwdFilter((None,))) == ["n"]
    assert q(CwdFilter(())) == []
    page = svc.search_sessions("needle", [], [TimeFilter(10.5, 20.0)], limit=9)
    assert [h.record.header.id for h in page.items] == ["b"]
