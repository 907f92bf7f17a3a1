"""The patterns lent by detect-secrets are kept as data (``indexer.redact.lent``): the file
is what the installed library holds, a process that loads the rules does not import the
library, and a file read from another version of the library is not used."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from typing import Any

import orjson
import pytest

from indexer.redact import lent
from indexer.redact.rules import lent_plugins
from tests.kafka.processes import REPO_ROOT


def test_the_stored_patterns_are_the_installed_librarys() -> None:
    stored = orjson.loads(resources.files("indexer.redact").joinpath(lent.FILE).read_bytes())
    # After an upgrade of the library: python -m worker.devtools.lent_patterns
    assert stored == orjson.loads(orjson.dumps(lent.extract(lent_plugins())))


def test_loading_the_rules_does_not_import_the_library() -> None:
    code = (
        "import sys\n"
        "from indexer.redact.rules import load_rules, ruleset_digest\n"
        "assert len(load_rules()) > 20 and ruleset_digest()\n"
        "print(sorted(m for m in sys.modules if m.startswith('detect_secrets')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_patterns_read_from_another_library_version_are_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = "detect_secrets.plugins.aws:AWSKeyDetector"
    stale: dict[str, Any] = {
        "library": lent.LIBRARY,
        "version": "0.0",
        "plugins": {ref: [["x", 0]]},
    }
    monkeypatch.setattr(lent, "_stored", lambda: stale)
    from detect_secrets.plugins.aws import AWSKeyDetector

    assert lent.lent_patterns(ref) == tuple(AWSKeyDetector.denylist)
