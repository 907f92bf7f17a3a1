"""``--search-mode words``: a query's words in any order, by their stems, identifiers
whole or by their parts; all words first, else any; the literal phrase ranked first.
``phrase`` stays upstream's rule. Both through the real tools over a real store."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from indexer.search_modes import SearchMode
from indexer.store.tantivy.analyzer import analyze
from indexer.store.tantivy.words import query_units, words_text
from tests.builders import header, user
from tests.fixtures.stores import StoreFactory
from worker.calls.limits import ToolLimits
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

CWD = "/home/dev/words"
CALLER = "c0000000-0000-4000-8000-000000000000"


def _sid(n: int) -> str:
    return f"c0000000-0000-4000-8000-{n:012d}"


SESSIONS: dict[int, str] = {
    1: "Retries now use exponential backoff; the configs live in retry.toml",
    2: "The OrderService computes totals per customer",
    3: "Fixed order_service rounding of the invoice total",
    4: "retry backoff config",  # the literal phrase
    5: "Unrelated talk about the weather and lunch",
    6: "The backoff was removed entirely",
}


@pytest.fixture
def tools(store_factory: StoreFactory) -> Pipeline:
    specs: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
        (header(CALLER, cwd=CWD), [user(0, "caller")])
    ]
    specs += [(header(_sid(n), cwd=CWD), [user(0, text)]) for n, text in SESSIONS.items()]
    return Pipeline(store_factory(specs))


def _found(tools: Pipeline, query: str, mode: SearchMode) -> list[str]:
    pipeline = Pipeline(tools.service, ToolLimits(search_mode=mode))
    reply = asyncio.run(pipeline.call("session_search", {"query": query}, Caller(CALLER)))
    assert reply.error is None, reply.error
    return re.findall(r"^\d+\. Session (\S+) ", reply.text or "", re.MULTILINE)


def test_words_in_any_order_and_any_inflection_match(tools: Pipeline) -> None:
    found = _found(tools, "retry backoff config", "words")
    assert found[0] == _sid(4)  # the literal phrase first
    assert _sid(1) in found  # retries ... backoff ... configs
    assert _found(tools, "retry backoff config", "phrase") == [_sid(4)]


def test_when_no_document_holds_every_word_any_word_matches(tools: Pipeline) -> None:
    found = _found(tools, "backoff jitter", "words")
    assert set(found) == {_sid(1), _sid(4), _sid(6)}
    assert _found(tools, "backoff jitter", "phrase") == []


def test_identifiers_match_whole_or_by_their_parts(tools: Pipeline) -> None:
    assert set(_found(tools, "order service totals", "words")) == {_sid(2), _sid(3)}
    assert set(_found(tools, "OrderService total", "words")) == {_sid(2), _sid(3)}
    assert _found(tools, "orderservice", "words") == [_sid(2)]


def test_nothing_matches_what_no_session_says(tools: Pipeline) -> None:
    assert _found(tools, "kubernetes helm chart", "words") == []


def test_event_search_matches_words_in_one_session(tools: Pipeline) -> None:
    pipeline = Pipeline(tools.service, ToolLimits(search_mode="words"))
    args = {"session_id": _sid(1), "query": "configure retrying"}
    reply = asyncio.run(pipeline.call("session_event_search", args, Caller(CALLER)))
    assert reply.error is None and "seq 0" in (reply.text or "")


@pytest.mark.parametrize(
    ("query", "units"),
    [
        ("retry backoff configs", [("retri", ()), ("backoff", ()), ("config", ())]),
        ("OrderService totals", [("orderservic", ("order", "servic")), ("total", ())]),
        ("XMLHttpRequest", [("xmlhttprequest", ("xml", "http", "request"))]),
        ("0kL7Axp9ucQsZ", [("0kl7axp9ucqsz", ())]),  # a token with digits is never split
        ("the the the", [("the", ())]),
    ],
)
def test_a_query_reads_into_units(query: str, units: list[tuple[str, tuple[str, ...]]]) -> None:
    assert query_units(query, analyze(query)) == units


def test_a_document_holds_its_tokens_and_identifier_parts() -> None:
    text = "Fix OrderService and parseJSON in a9Bc"
    assert words_text(text, " ".join(analyze(text))) == (
        "fix orderservice and parsejson in a9bc order service parse json"
    )
