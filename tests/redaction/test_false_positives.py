"""False positives: the rule set over real logs and the demo corpus, and over near
misses made to look like secrets. Every finding on the real logs is listed in
``ACCEPTED`` with what it is (docs/security.md explains each); none is there today."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from indexer.redact.policy import detector
from indexer.redact.values import redact_value
from tests.data_paths import DATA_DIR
from worker.devtools.demo_corpus.writer import write_demo_corpus

ACCEPTED: dict[str, str] = {}
"""``<file>:<line>: <kind>`` -> why the finding is right (or harmless)."""


def findings(paths: list[Path], root: Path) -> list[str]:
    out = []
    for path in sorted(paths):
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            try:
                obj: Any = json.loads(line)
            except ValueError:
                continue
            counts: Counter[str] = Counter()
            redact_value(detector(), obj, counts)
            out += [f"{path.relative_to(root)}:{n}: {kind}" for kind in sorted(counts)]
    return out


def test_real_logs_have_no_false_positives() -> None:
    corpora = [DATA_DIR / "dsh", DATA_DIR / "claude-code", DATA_DIR / "codex"]
    paths = [p for c in corpora for p in c.rglob("*.jsonl")]
    assert len([p for p in paths if p.parent == DATA_DIR / "dsh"]) == 159
    assert findings(paths, DATA_DIR) == sorted(ACCEPTED)


def test_the_demo_corpus_has_no_false_positives(tmp_path: Path) -> None:
    write_demo_corpus(tmp_path, 200)
    paths = list(tmp_path.rglob("*.jsonl"))
    assert len(paths) >= 200
    assert findings(paths, tmp_path) == []


NEAR_MISSES = [
    'password = os.environ["DB_PASSWORD"]',
    "token = get_token(request)",
    "api_key = settings.OPENAI_API_KEY",
    'config["access_key_id"] = settings.s3_access_key_id',
    "def __init__(self, kid: str, private_key: Ed25519PrivateKey, *, ttl_s: int)",
    "max_tokens=4096, input_tokens: 1234567890",
    "SESSIONQ_KEYRING: /etc/sessionq/keyring/keyring.json",
    "export GITHUB_TOKEN=${GITHUB_TOKEN}",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "postgres://user:${DB_PASS}@localhost:5432/app",
    'f"postgres://app_user:{secret}@db.internal:5432/orders"',
    "https://user:password@example.com/",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
    "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640",
    "request id 3f2b8c1e-5d4a-4e6f-9b7a-1c2d3e4f5a6b",
    "tokenizer = o200k_base",
    "SECRET_KEY_FILE=./secrets/django.key",
    "the task-runner risk-score desk-lamp",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "password: str = Field(default=...)",
    "Set PASSWORD_MIN_LENGTH=12 and TOKEN_TTL_SECONDS=3600",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_redacted(text: str) -> None:
    assert detector().find(text) == []
