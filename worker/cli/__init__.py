"""The ``sessionq`` command line (``main``) and its parser (``build_parser``)."""

from worker.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
