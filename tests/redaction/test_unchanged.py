"""The tool outputs of the real corpus (sessions without secrets) are byte for byte the
same in every mode: the store fixture's every reply, read and trace
(``tests.indexer.store_fixture.outputs``) over dirs written with off, on and store."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.redact import Redaction
from tests.indexer.store_fixture import build, outputs


@pytest.mark.parametrize("mode", ["on", "store"])
def test_real_corpus_outputs_are_the_same_in_every_mode(tmp_path: Path, mode: str) -> None:
    build(tmp_path / "off", Redaction("off"))
    build(tmp_path / mode, Redaction(mode))  # type: ignore[arg-type]
    plain, redacted = outputs(tmp_path / "off"), outputs(tmp_path / mode)
    assert len(plain["replies"]) > 500
    assert redacted == plain
