"""``sessionq delete`` refuses what it cannot do with one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.cli.main import main


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SESSIONQ_BOOTSTRAP", "SESSIONQ_URL", "SESSIONQ_TOKEN_FILE", "SESSIONQ_DATA"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["delete", "x"], "give --bootstrap (Kafka) or --url and --token-file"),
        (["delete", "x", "--bootstrap", "127.0.0.1:1"], "give --data DIR"),
        (
            ["delete", "x", "--bootstrap", "127.0.0.1:1", "--data", "d", "--workspace", "/w"],
            "one of them",
        ),
        (["delete", "x", "--url", "http://127.0.0.1:1", "--bootstrap", "h:1"], "not both"),
        (["delete", "x", "--url", "http://127.0.0.1:1"], "--url needs --token-file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_unreachable_serve_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    code = main(["delete", "x", "--url", "http://127.0.0.1:9", "--token-file", str(token)])
    assert code == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("sessionq delete: cannot reach http://127.0.0.1:9") and "secret" not in err
    )
