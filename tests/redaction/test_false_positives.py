"""False positives: the rule set over every real log and the demo corpus, and over near
misses made to look like secrets.

The real logs are this repository's (``tests/data``: the dsh corpus, the other agents'
fixtures) and those of the project's shared folder, read where they are (``../shared``
beside the checkout; other projects' logs are not copied here): the dsh corpus, other
projects' Claude Code, Codex and Gemini fixtures, and the Aider histories of the relevance
set with their Claude Code conversions. Every value redacted in them is in ``ACCEPTED``,
by the SHA-256 of the value (the value itself stays out of this file), with what it is;
docs/security.md sums them up.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from indexer.redact.policy import detector
from indexer.redact.values import redact_value
from tests.data_paths import CORPUS_DIR, DATA_DIR, SHARED
from worker.devtools.demo_corpus.writer import write_demo_corpus

REAL_LOGS = [
    DATA_DIR / "claude-code",
    DATA_DIR / "codex",
    DATA_DIR / "gemini",
    DATA_DIR / "opencode",
    DATA_DIR / "copilot",
    CORPUS_DIR,
    SHARED / "fixtures" / "real",
    SHARED / "relevance",
]
SUFFIXES = (".jsonl", ".json", ".md", ".yaml")

ACCEPTED: dict[str, str] = {
    "fcf730b6d952": "connection-string-password: a development MongoDB password in the "
    "docker-compose files and settings of one relevance project (HaaV-CatalogService): "
    "a credential by its form; redacting it is right",
    "3dbdb2104999": "connection-string-password: a development PostgreSQL password in the "
    ".env of one relevance project (rfp_response_platform): the same",
    "df452eef23e8": "secret-assignment: MinIO's published secret key of its public play "
    "server, in one relevance project (pdf_ingestion): a real credential, published",
}
"""SHA-256 prefix of a redacted value -> what it is and why redacting it is right."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def _redacted(obj: Any, found: Counter[str]) -> None:
    """Add ``digest kind`` of every value the walk redacts in ``obj`` (a string, or a
    member whose name says secret) to ``found``."""
    counts: Counter[str] = Counter()
    redact_value(detector(), obj, counts)
    if not counts:
        return
    stack: list[tuple[str | None, Any]] = [(None, obj)]
    while stack:
        name, value = stack.pop()
        if isinstance(value, dict):
            stack += [(str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(None, v) for v in value]
        elif isinstance(value, str):
            hits = detector().find(value)
            found.update(f"{_digest(value[f.start : f.end])} {f.kind}" for f in hits)
            named: Counter[str] = Counter()
            if not hits and name is not None and redact_value(detector(), {name: value}, named):
                found.update(f"{_digest(value)} {kind}" for kind in named)


def findings(paths: list[Path]) -> Counter[str]:
    """``digest kind`` -> times redacted, over the logs at ``paths``: a JSONL file line by
    line, a JSON file whole, any other as text."""
    found: Counter[str] = Counter()
    for path in sorted(paths):
        text = path.read_text(errors="replace")
        if path.suffix == ".jsonl":
            docs = text.splitlines()
        elif path.suffix == ".json":
            docs = [text]
        else:
            _redacted(text, found)
            continue
        for doc in docs:
            try:
                obj: Any = json.loads(doc)
            except ValueError:
                continue
            _redacted(obj, found)
    return found


def test_every_real_log_is_read() -> None:
    assert SHARED.is_dir(), f"the project's shared folder is not beside the checkout: {SHARED}"
    for root in REAL_LOGS:
        assert root.is_dir(), root
    assert len(list(CORPUS_DIR.glob("*.jsonl"))) == 159
    assert len(list((SHARED / "relevance").rglob("*.aider.chat.history.md"))) >= 23
    assert len(list((SHARED / "fixtures" / "real").rglob("*.jsonl"))) >= 30


def test_real_logs_have_no_false_positives() -> None:
    paths = [p for root in REAL_LOGS for p in root.rglob("*") if p.suffix in SUFFIXES]
    found = findings(paths)
    print(f"{len(paths)} files; redacted: {dict(found)}")
    assert {key.split()[0] for key in found} == set(ACCEPTED), found


def test_the_demo_corpus_has_no_false_positives(tmp_path: Path) -> None:
    write_demo_corpus(tmp_path, 200)
    paths = list(tmp_path.rglob("*.jsonl"))
    assert len(paths) >= 200
    assert findings(paths) == Counter()


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
    "curl -u admin:$ADMIN_PASS https://x",
    'curl -u "${USER}:${PASS}" https://x',
    "curl -u <user:password> https://test.com",
    'curl -H "X-API-Key: $API_KEY" https://x',
    "overall_pass = pass_criteria_17",
    "credentialsId: 'ff083f76-7804-4ef1-80e4-fe975bb9141b'",
    "<UserSecretsId>79a3edd0-2092-40a2-a04d-dcb46d5ca9ed</UserSecretsId>",
    'LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY"',
    "DATABASE_URL=postgres://postgres:postgres@localhost:5432/app",
    "DATABASE_URL='postgresql+asyncpg://rfp_user:your_secure_password@localhost:5432/rfp'",
    "http://localhost:8080@example.com",
    "PASSWORD=$DB_PASSWORD",
    "export PGPASSWORD=$(cat /run/secrets/pg)",
    "api_key: ${{ secrets.API_KEY }}",
    'db_password: "{{ vault_db_password }}"',
    "TOKEN_PATH=/var/run/secrets/kubernetes.io/serviceaccount/token",
    "password_hash = bcrypt.hashpw(pw, salt)",
    "`Authorization: Bearer/Basic/Token` values",
    '-d \'{"companyName": "Test Corp", "apiKey": "thisIsAWrongApiKey123"}\'',
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_redacted(text: str) -> None:
    assert detector().find(text) == []
