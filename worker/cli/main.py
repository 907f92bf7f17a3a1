"""``sessionq`` command line: parse -> the command's module -> the role's settings -> run.

The parser (``worker.cli.parser``) knows every command and flag without importing any
command; ``worker.cli.commands`` names the function that runs each, imported once the
command line has parsed. A failure the command does not report itself is one line on
stderr: the broker unreachable (exit 1), the data dir taken by another writer or a
redaction mode it cannot take (exit 2).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from indexer.errors import KafkaAccessError, RedactionModeError, UndeliverableError
from indexer.store.lease import DataDirBusyError
from worker.cli.commands import handler
from worker.cli.exits import EXIT_FAILED, EXIT_USAGE, fail
from worker.cli.parser import build_parser
from worker.cli.terminal import make_total

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    make_total()
    args = build_parser().parse_args(argv)
    run = handler(args.run)
    # aiokafka logs every failed connection attempt; without a configured log (the
    # one-shot commands) Python would print them: the one line below says it all.
    logging.getLogger("aiokafka").addHandler(logging.NullHandler())
    try:
        return run(args)
    except (KafkaAccessError, UndeliverableError) as exc:
        print(f"sessionq {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except DataDirBusyError as exc:
        print(f"sessionq {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RedactionModeError as exc:  # --redact-secrets the data dir cannot take
        fail(args.command, exc.message)


if __name__ == "__main__":
    sys.exit(main())
