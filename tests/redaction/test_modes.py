"""The redaction a data dir records, and what a writer of another mode or rule set does
with it (``indexer.redact.state``): off <-> on and a changed rule set re-index the dir on
the writer's first open (readers of the other rule set refuse it until then); into or out
of store is refused with one line; a dir without sessions takes any mode."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from indexer.errors import PERSISTENCE_FAILED, RedactionModeError, SessionQueryError
from indexer.query.service import StoreQueryService
from indexer.redact import Redaction, RedactMode
from indexer.redact.rules import ruleset_digest
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.redaction.corpus import LEAKY, secrets_log
from tests.redaction.test_end_to_end import call, ingest, token_kinds
from worker.cli.main import main


def meta(data: Path) -> str:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'redaction'").fetchone()[0])
    finally:
        conn.close()


def reopen(data: Path, mode: RedactMode) -> None:
    Store(data, redaction=Redaction(mode)).close()


def found(data: Path, secrets: list[str]) -> list[str]:
    return [s for s in secrets if LEAKY in call(data, "session_search", {"query": s})]


def test_off_to_on_reindexes_and_on_to_off_restores(tmp_path: Path) -> None:
    paths, items = secrets_log(tmp_path)
    secrets = [i.secret for i in token_kinds(items)]
    data = tmp_path / "d"
    ingest(data, paths, "off")
    assert meta(data) == "off" and found(data, secrets) == secrets
    reopen(data, "on")
    assert meta(data) == f"on:{ruleset_digest()}"
    assert found(data, secrets) == []
    reopen(data, "off")
    assert found(data, secrets) == secrets


def test_a_changed_rule_set_reindexes_on_the_writers_first_open(tmp_path: Path) -> None:
    """A dir indexed by a rule set that missed every secret (here: indexed unredacted,
    recorded as an older rule set's ``on``): readers refuse it, the writer re-indexes it."""
    paths, items = secrets_log(tmp_path)
    secrets = [i.secret for i in token_kinds(items)]
    data = tmp_path / "d"
    ingest(data, paths, "off")
    conn = sqlite3.connect(sqlite_path(data))
    conn.execute("UPDATE meta SET value = 'on:0-0000000000000000' WHERE key = 'redaction'")
    conn.commit()
    conn.close()
    service = StoreQueryService(data)
    try:
        with pytest.raises(SessionQueryError) as refused:
            service.read_event(LEAKY, 0)
        assert refused.value.code == PERSISTENCE_FAILED
        assert "redaction rules 0-0000000000000000" in refused.value.message
    finally:
        service.close()
    reopen(data, "on")
    assert meta(data) == f"on:{ruleset_digest()}"
    assert found(data, secrets) == []


@pytest.mark.parametrize(
    ("written", "opened"), [("on", "store"), ("off", "store"), ("store", "on")]
)
def test_store_mode_cannot_be_entered_or_left_on_a_dir_with_sessions(
    tmp_path: Path, written: RedactMode, opened: RedactMode
) -> None:
    paths, _items = secrets_log(tmp_path)
    data = tmp_path / "d"
    ingest(data, paths, written)
    before = meta(data)
    with pytest.raises(RedactionModeError) as refused:
        reopen(data, opened)
    assert f"--redact-secrets {written}" in refused.value.message
    assert meta(data) == before


def test_the_cli_refuses_a_mode_the_dir_cannot_take_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, _items = secrets_log(tmp_path)
    data = tmp_path / "d"
    ingest(data, paths, "on")
    with pytest.raises(SystemExit) as exit_:
        main(["ingest", str(paths[0]), "--data", str(data), "--redact-secrets", "store"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sessionq ingest: the data dir was written with")


def test_a_dir_without_sessions_takes_any_mode(tmp_path: Path) -> None:
    data = tmp_path / "d"
    reopen(data, "store")
    assert meta(data).startswith("store:")
    reopen(data, "off")
    assert meta(data) == "off"


def test_store_mode_takes_a_re_delivery_stored_under_an_older_rule_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event stored redacted by a rule set that missed a secret, delivered again to a
    writer whose rules find it: the same event, not a seq conflict."""
    from indexer.model.records import EventsRecord, HeaderRecord
    from indexer.redact import policy
    from indexer.redact.detect import Detector
    from indexer.redact.rules import load_rules
    from tests.builders import header, user

    token = "ghp_" + "Zx8Qm3Lp7Rt2Vb9Nc4Df6Gs1Jk5Hw0Ya2Eu7Io"
    events = [user(0, "hello"), user(1, f"use {token} for the push")]
    older = Detector(tuple(r for r in load_rules() if r.id != "github-token"))
    data = tmp_path / "d"
    monkeypatch.setattr(policy, "detector", lambda: older)
    store = Store(data, redaction=Redaction("store"))
    store.apply(HeaderRecord(v=1, kind="header", header=header(LEAKY)))
    store.apply(EventsRecord(v=1, kind="events", session_id=LEAKY, events=events))
    store.commit()
    store.close()
    monkeypatch.undo()
    store = Store(data, redaction=Redaction("store"))
    try:
        applied = store.apply(EventsRecord(v=1, kind="events", session_id=LEAKY, events=events))
        store.commit()
    finally:
        store.close()
    assert applied.noop


def test_an_open_reader_shows_a_changed_mode_at_once(tmp_path: Path) -> None:
    """A reader remembers the recorded redaction only until another connection commits:
    the writer re-indexing the dir under another mode changes what the same open
    service shows on its very next read."""
    paths, items = secrets_log(tmp_path)
    secret = token_kinds(items)[0].secret
    data = tmp_path / "d"
    ingest(data, paths, "off")
    service = StoreQueryService(data)
    try:

        def shown() -> str:
            window = service.read_event(LEAKY, 0, after=len(items))
            return json.dumps([e.obj for e in window.events])

        assert secret in shown() and secret in shown()
        reopen(data, "on")
        assert secret not in shown()
        reopen(data, "off")
        assert secret in shown()
    finally:
        service.close()
