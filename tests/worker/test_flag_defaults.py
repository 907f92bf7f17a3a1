"""Every command's ``--help`` shows its settings' defaults, from a table generated from
the settings models (``worker.devtools.flag_defaults``) so the parser loads no model."""

from __future__ import annotations

import contextlib
import io

import pytest

from worker.cli.flag_defaults import DEFAULTS
from worker.cli.parser import build_parser
from worker.devtools.flag_defaults import COMMAND_SETTINGS, TARGET, render
from worker.settings import ServeSettings


def test_the_table_is_what_the_models_say() -> None:
    assert TARGET.read_text(encoding="utf-8") == render(), (
        "stale: python -m worker.devtools.flag_defaults"
    )


def test_the_table_covers_every_command_that_reads_settings() -> None:
    assert set(DEFAULTS) == set(COMMAND_SETTINGS)
    assert DEFAULTS["serve"]["listen"] == ServeSettings.model_fields["listen"].default


def help_of(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return " ".join(out.getvalue().split())  # argparse wraps lines where it likes


def test_help_says_what_a_command_is_for_with_its_defaults() -> None:
    serve = help_of("serve")
    assert "Embedded mode" in serve
    assert "(default: 127.0.0.1:8765; SESSIONQ_LISTEN)" in serve
    assert "(default: words; SESSIONQ_SEARCH_MODE)" in serve
    assert "(SESSIONQ_DATA)" in serve  # no default: only its variable
    assert "session_event_read" in help_of("call") and "..." not in help_of("call")
    top = help_of()
    assert "search and read" in top and "``" not in top and "->" not in top
