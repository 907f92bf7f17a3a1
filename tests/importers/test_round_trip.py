"""Round trip, swept over every importer fixture: every event of every imported session
is readable with ``session_event_read``, and every marker word of the source files
(user, assistant, tool-call and tool-result text) is found by ``session_event_search``
in its session, except the words the docs list as not searchable (thinking, log-only
records), which are found nowhere."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import pytest

from indexer.logs.importers import LogSource, discover_report, read_source
from indexer.sources.files import IngestSummary
from tests.data_paths import AIDER_DIR, COPILOT_DIR, GEMINI_DIR, OPENCODE_DIR
from tests.fixtures.importers import (
    CLAUDE_CODE_DIR,
    CLAUDE_PROJECTS,
    CODEX_DIR,
    CODEX_SESSIONS,
    Tools,
    ingest,
)
from worker.tools.access import Caller

TREES: Final = (
    CLAUDE_PROJECTS,
    CLAUDE_CODE_DIR / "loose",
    CODEX_SESSIONS,
    CODEX_DIR / "review",
    GEMINI_DIR,
    OPENCODE_DIR,
    COPILOT_DIR,
    AIDER_DIR,
)
# Words of the fixtures that are kept but never searchable (docs/importers.md): thinking
# and reasoning, and records that have no mapping (log-only, kept verbatim).
NOT_SEARCHABLE: Final = {
    "SECRETTHOUGHT",
    "CODEXTHOUGHT",
    "GEMTHOUGHT",
    "OCTHOUGHT",
    "COPILOTTHOUGHT",
    "UNKNOWNTYPE_TOKEN",
    "DEVELOPERONLY_TOKEN",
    "GEMINFO_TOKEN",
    "COPILOTFUTURE_TOKEN",
    "AIDERTHOUGHT",
    "AIDERLONETHOUGHT",
    "AIDERCHATTER",
}
_MARKER: Final = re.compile(r"\b[A-Z][A-Z]{3,}(?:_[A-Z]+)*\b")
# Upper-case words of the formats themselves, not fixture text.
_FORMAT_WORDS: Final = {"AGENTS", "SYNTHETIC_CONTEXT"}
END: Final = 10**9  # a step seq beyond every log: a session searches all of itself


def _sessions() -> dict[LogSource, str]:
    """Every fixture log (a file, or a session of an Aider history) -> the session it
    is read into."""
    return {s: read_source(s).header.id for s in discover_report(TREES).sources}


def _text(source: LogSource) -> str:
    """A log's text: its file's, or its session's lines of an Aider history."""
    text = source.path.read_text()
    if source.section is None:
        return text
    lines = text.splitlines()[source.section.line - 1 :]
    ends = [i for i, line in enumerate(lines) if line.startswith("# aider chat started at ")]
    return "\n".join(lines[: ends[1] if len(ends) > 1 else None])


def _markers(source: LogSource) -> set[str]:
    """The marker words of a fixture log (an OpenCode session: of its messages and
    parts too)."""
    path = source.path
    texts = [_text(source)]
    if path.parent.parent.name == "session":  # OpenCode: storage/session/<project>/
        storage, sid = path.parents[2], path.stem
        messages = sorted((storage / "message" / sid).glob("*.json"))
        files = messages + [p for m in messages for p in (storage / "part" / m.stem).glob("*")]
        texts += [f.read_text() for f in files]
    words = {w for text in texts for w in _MARKER.findall(text)}
    return {w for w in words if "_" in w or len(w) >= 5} - _FORMAT_WORDS


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tools, IngestSummary]]:
    data = tmp_path_factory.mktemp("round-trip") / "data"
    summary = ingest(data, *TREES)
    tools = Tools(data)
    yield tools, summary
    tools.close()


def test_every_fixture_file_is_ingested(swept: tuple[Tools, IngestSummary]) -> None:
    _, summary = swept
    assert summary.rejected == []
    assert summary.sessions == len(set(_sessions().values())) == 25


async def test_every_event_of_every_imported_session_is_readable(
    swept: tuple[Tools, IngestSummary],
) -> None:
    tools, summary = swept
    read = 0
    for sid in sorted(set(_sessions().values())):
        record = tools.service.get_session(sid)
        assert record is not None, sid
        count = len(tools.service.list_events(sid))
        assert count > 0
        for seq in range(count):
            result = await tools.pipeline.call("session_event_read", {"seq": seq}, Caller(sid))
            assert result.ok, (sid, seq, result)
            assert f"Target event seq {seq}:" in result.text
            read += 1
    assert read == summary.events


@pytest.mark.parametrize("source", sorted(_sessions(), key=lambda s: s.key), ids=lambda s: s.name)
async def test_every_text_of_the_source_is_searchable_in_its_session(
    swept: tuple[Tools, IngestSummary], source: LogSource
) -> None:
    tools, _ = swept
    sid = _sessions()[source]
    markers = _markers(source)
    assert markers, source
    for word in sorted(markers):
        result = await tools.pipeline.call(
            "session_event_search", {"query": word}, Caller(sid, step_seq=END)
        )
        assert result.ok, result
        found = "No prior event matches found." not in result.text
        assert found == (word not in NOT_SEARCHABLE), (source.name, word, result.text)
