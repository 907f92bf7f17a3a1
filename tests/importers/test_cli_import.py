"""``sessionq ingest`` recognises Claude Code and Codex roots on its own and takes
``--format``; ``sessionq stats`` counts sessions and events per source agent."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.data_paths import CORPUS_DIR
from tests.fixtures.importers import CLAUDE_MALFORMED, CLAUDE_PROJECTS, CODEX_SESSIONS
from worker.cli.main import main


def test_ingest_recognises_both_trees_and_stats_counts_per_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["ingest", str(CLAUDE_PROJECTS), str(CODEX_SESSIONS), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ingested 9 sessions, 63 events, "), out
    assert "rejected" not in out
    assert main(["stats", "--data", str(data), "--json"]) == 0
    stats = orjson.loads(capsys.readouterr().out)
    assert stats["agents"]["claude-code"] == {"sessions": 6, "events": 33}
    assert stats["agents"]["codex"] == {"sessions": 3, "events": 30}
    assert sum(a["events"] for a in stats["agents"].values()) == stats["events"]
    assert main(["stats", "--data", str(data)]) == 0
    text = capsys.readouterr().out
    # the agents as a table: a row per agent that has sessions
    lines = text.splitlines()
    table = lines[lines.index("agents:") + 1 :]
    assert table[0].split() == ["sessions", "events"]
    assert table[1].split() == ["claude-code", "6", "33"]
    assert table[2].split() == ["codex", "3", "30"]


def test_ingest_counts_dsh_sessions_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    one = CORPUS_DIR / "examples__acp-agent__bash-tool-turn__session.jsonl"
    assert main(["ingest", str(one), str(CODEX_SESSIONS), "--data", str(data)]) == 0
    capsys.readouterr()
    assert main(["stats", "--data", str(data), "--json"]) == 0
    agents = orjson.loads(capsys.readouterr().out)["agents"]
    assert agents["dsh"]["sessions"] == 1 and agents["codex"]["sessions"] == 3


def test_a_forced_format_reads_every_file_that_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    # A Claude Code tree has no rollout-*.jsonl: forced to Codex, nothing is found.
    code = main(["ingest", str(CLAUDE_PROJECTS), "--format", "codex", "--data", str(data)])
    captured = capsys.readouterr()
    assert code == 1
    assert "no session logs found" in captured.err
    # A Claude Code file forced to Codex is read as one, and rejected with the reason.
    one = CLAUDE_PROJECTS / "-home-dev-shop" / "11111111-1111-4111-8111-111111111111.jsonl"
    assert main(["ingest", str(one), "--format", "codex", "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert "ingested 0 sessions" in out
    assert f"  {one}:1: no session_meta line carries an id" in out
    assert (
        main(["ingest", str(CLAUDE_MALFORMED), "--format", "claude-code", "--data", str(data)]) == 1
    )
    out = capsys.readouterr().out
    assert "rejected 4 files:" in out and "skipped 1 files with no conversation:" in out
    assert ":1: no record carries a sessionId" in out


def test_an_unknown_format_is_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["ingest", str(CODEX_SESSIONS), "--format", "cursor", "--data", str(tmp_path)])
    assert exc.value.code == 2
    assert "invalid choice: 'cursor'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["serve", "--sessions", "x", "--data", "d"], ["publish", "x"]])
def test_serve_and_publish_take_the_format_from_the_flag_or_the_environment(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from worker.cli.main import build_parser
    from worker.cli.options import settings_from
    from worker.settings import PublishSettings, ServeSettings

    def fmt(argv: list[str]) -> str:
        args = build_parser().parse_args(argv)
        if argv[0] == "serve":
            return settings_from(ServeSettings, args).format
        return settings_from(PublishSettings, args).format

    monkeypatch.setenv("SESSIONQ_BOOTSTRAP", "127.0.0.1:9")
    assert fmt(command) == "auto"
    monkeypatch.setenv("SESSIONQ_FORMAT", "codex")
    assert fmt(command) == "codex"
    assert fmt([*command, "--format", "claude-code"]) == "claude-code"
