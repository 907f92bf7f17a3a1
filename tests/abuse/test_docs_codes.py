"""Issue 10 item 9: the host guide names the dead-letter codes the system really sends."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from indexer import errors
from indexer.errors import RecordRejectedError
from indexer.model.records import decode_record

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
CODES = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str)}


def _source_text() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for root in ("indexer", "worker", "deploy")
        for p in (REPO / root).rglob("*")
        if p.suffix in {".py", ".sh"} and p.is_file()
    )


def test_every_sessionq_name_in_the_docs_is_a_code_or_a_setting() -> None:
    source = _source_text()
    for doc in [*DOCS.rglob("*.md"), *DOCS.rglob("*.json")]:
        for name in set(re.findall(r"SESSIONQ_[A-Z_]+[A-Z]", doc.read_text(encoding="utf-8"))):
            if name in CODES:
                continue
            # otherwise an environment variable the code reads (settings: prefix + field)
            field = name.removeprefix("SESSIONQ_").lower()
            assert name in source or field in source, (
                f"{doc.relative_to(REPO)} names {name}, which nothing sends or reads"
            )


def _reject(value: bytes | None) -> str:
    with pytest.raises(RecordRejectedError) as info:
        decode_record(value)
    return info.value.code


def test_the_guide_names_the_code_a_bad_envelope_gets() -> None:
    guide = (DOCS / "host-integration.md").read_text(encoding="utf-8")
    bullet = guide[guide.index("**Invalid records are dead-lettered whole**") :]
    bullet = bullet[: bullet.index("\n* ")]
    sent = {
        _reject(b"not json"),
        _reject(None),
        _reject(orjson.dumps({"v": 1, "kind": "shout"})),
    }
    assert sent == {errors.RECORD_REJECTED}
    before_bad_envelope = bullet[: bullet.index(")") + 1]
    assert f"`{errors.RECORD_REJECTED}`" in before_bad_envelope, bullet
    assert f"`{errors.INVALID_RECORD}`" in bullet
