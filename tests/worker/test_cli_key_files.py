"""A key file that cannot be used is met at the door: ``call --signing-key`` and
``worker``/``node --keyring`` naming a missing, unreadable or malformed file say so in
one line naming the flag, the file and what is wrong, exit 2, before any work and
before any directory is made (the bootstrap address answers nothing: a role that
got past the door would wait for it). Real ``sessionq`` processes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

import pytest

from tests.fixtures.processes import sessionq

REPO: Final = Path(__file__).resolve().parents[2]
UNREACHABLE: Final = "127.0.0.1:1"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A missing file, a directory, a file that is not what the flag wants, and a
    keyring whose key is no PEM."""
    made = {
        "missing": tmp_path / "missing",
        "directory": tmp_path / "a-directory",
        "junk": tmp_path / "junk.pem",
        "bad-entry": tmp_path / "keyring.json",
    }
    made["directory"].mkdir()
    made["junk"].write_text("not a key\n")
    made["bad-entry"].write_text(
        '{"keys": [{"kid": "h", "public_key": "x", "workspaces": ["/w"]}]}'
    )
    return made


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


WHAT: Final = {
    "missing": "No such file or directory",
    "directory": "Is a directory",
    "junk": "not",
    "bad-entry": "keys[0].public_key is not a PEM public key",
}


@pytest.mark.parametrize("case", ["missing", "directory", "junk"])
def test_call_with_an_unusable_signing_key_is_one_line(case: str, files: dict[str, Path]) -> None:
    path = files[case]
    line = one_line(
        sessionq(
            "call",
            "session_search",
            '{"query": "x"}',
            "--caller",
            "c",
            "--bootstrap",
            UNREACHABLE,
            "--signing-key",
            str(path),
            "--key-id",
            "k",
        )
    )
    assert line.startswith(f"sessionq call: --signing-key {path}: "), line
    assert WHAT[case] in line, line
    if case == "junk":
        assert "not a PEM private key" in line and "https://" not in line, line


@pytest.mark.parametrize("role", ["worker", "node"])
@pytest.mark.parametrize("case", ["missing", "directory", "junk", "bad-entry"])
def test_a_role_with_an_unusable_keyring_is_one_line_and_makes_no_directory(
    role: str, case: str, files: dict[str, Path], tmp_path: Path
) -> None:
    path, data = files[case], tmp_path / "data"
    line = one_line(
        sessionq(
            role,
            "--data",
            str(data),
            "--bootstrap",
            UNREACHABLE,
            "--keyring",
            str(path),
            "--metrics-listen",
            "",
        )
    )
    assert line.startswith(f"sessionq {role}: --keyring {path}: "), line
    assert WHAT[case] in line, line
    assert not data.exists()
