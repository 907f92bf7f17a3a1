"""Write ``indexer/redact/lent_patterns.json`` again from the installed detect-secrets
library (after an upgrade of the library: ``tests/redaction/test_lent_patterns.py`` says
when). Run: ``python -m worker.devtools.lent_patterns``."""

from __future__ import annotations

import sys
from importlib import resources

import orjson

from indexer.redact.lent import FILE, extract
from indexer.redact.rules import lent_plugins


def main() -> int:
    path = resources.files("indexer.redact").joinpath(FILE)
    text = orjson.dumps(extract(lent_plugins()), option=orjson.OPT_INDENT_2) + b"\n"
    with open(str(path), "wb") as out:
        out.write(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
