"""The generated files: their byte-stable text, the staleness check, the writer and the
command line (``python -m worker.devtools.protocol_docs [--out docs] [--check]``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from worker.devtools.protocol_docs.asyncapi import build_asyncapi
from worker.devtools.protocol_docs.parts import Schema
from worker.devtools.protocol_docs.schemas import build_schemas

SUMMARY: Final = "Write sessionq's protocol docs: JSON Schemas and an AsyncAPI 3.0 document."


def render(doc: Schema) -> str:
    """The byte-stable text of one document."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def build_files() -> dict[str, str]:
    """Relative path -> file text, for everything ``main`` writes."""
    schemas = build_schemas()
    files = {f"schemas/{name}.schema.json": render(s) for name, s in schemas.items()}
    files["asyncapi.json"] = render(build_asyncapi(schemas))
    return files


def stale_files(out: Path) -> list[str]:
    """Generated files that are missing or differ under ``out``, plus stray schema files."""
    files = build_files()
    stale = [
        rel
        for rel, text in files.items()
        if not (out / rel).is_file() or (out / rel).read_text(encoding="utf-8") != text
    ]
    schema_dir = out / "schemas"
    if schema_dir.is_dir():
        stale += sorted(
            f"schemas/{p.name}"
            for p in schema_dir.glob("*.schema.json")
            if f"schemas/{p.name}" not in files
        )
    return stale


def write_files(out: Path) -> list[str]:
    """Write every generated file, remove stray ``*.schema.json``; return what changed."""
    changed = stale_files(out)
    files = build_files()
    for rel in changed:
        path = out / rel
        if rel in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worker.devtools.protocol_docs", description=SUMMARY
    )
    parser.add_argument("--out", type=Path, default=Path("docs"), help="output dir (docs)")
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        for rel in stale:
            print(f"stale: {args.out / rel}", file=sys.stderr)
        return 1 if stale else 0
    for rel in write_files(args.out):
        print(f"wrote {args.out / rel}")
    return 0
