"""The ``sessionq`` command line (``main``) and its parser (``build_parser``)."""

from worker.cli.main import main
from worker.cli.parser import build_parser

__all__ = ["build_parser", "main"]
