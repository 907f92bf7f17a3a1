"""``sessionq`` command line: thin parse -> settings -> run.

Every flag can also be set through an environment variable ``SESSIONQ_<FLAG>`` (upper
case, dashes as underscores); an explicit flag wins.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TOOL_ERROR = 3

Handler = Callable[[argparse.Namespace], int]


def env(name: str, default: str | None = None) -> str | None:
    """The ``SESSIONQ_<NAME>`` environment value, or ``default``."""
    return os.environ.get(f"SESSIONQ_{name.upper().replace('-', '_')}", default)


def _data_arg(p: argparse.ArgumentParser) -> None:
    default = env("data")
    p.add_argument(
        "--data",
        type=Path,
        default=Path(default) if default else None,
        required=default is None,
        help="data directory (SESSIONQ_DATA)",
    )


# ---- ingest / stats ---------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> int:
    from indexer.ingest import ingest_files
    from indexer.logs.roots import discover
    from indexer.storage import Store

    files = list(discover([Path(p) for p in args.paths]))
    store = Store(args.data)
    bar = None
    if sys.stderr.isatty() and files:
        from tqdm import tqdm

        bar = tqdm(total=len(files), unit="file", file=sys.stderr, desc="ingest")
    try:
        summary = ingest_files(store, files, on_file=(lambda _p: bar.update(1)) if bar else None)
    finally:
        if bar is not None:
            bar.close()
        store.close()
    print(
        f"ingested {summary.sessions} sessions, {summary.events} events, "
        f"{summary.documents} documents from {summary.files} files"
        + (f" ({summary.unchanged} unchanged)" if summary.unchanged else "")
    )
    if summary.rejected:
        print(f"rejected {len(summary.rejected)} files:")
        for r in summary.rejected:
            print(f"  {r.reason}")
    if not files:
        print("no session logs found", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK if summary.readable else EXIT_FAILED


def cmd_stats(args: argparse.Namespace) -> int:
    from indexer.stats import store_stats

    stats = store_stats(args.data)
    if args.json:
        sys.stdout.write(orjson.dumps(stats.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return EXIT_OK
    for key, value in stats.to_json().items():
        print(f"{key}: {value}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sessionq", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="index dsh session logs (files or dsh roots)")
    p.add_argument("paths", nargs="+", help="session log files or directories")
    _data_arg(p)
    p.set_defaults(handler=cmd_ingest)

    p = sub.add_parser("stats", help="what a data directory holds")
    _data_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_stats)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
