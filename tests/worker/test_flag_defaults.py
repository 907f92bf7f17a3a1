"""Every command's ``--help`` shows its settings' defaults, from a table generated from
the settings models (``worker.devtools.flag_defaults``) so the parser loads no model."""

from __future__ import annotations

import argparse
import contextlib
import io
from typing import Any

import pytest

from indexer.settings import flat_fields, nested_model
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


def _subparsers(parser: argparse.ArgumentParser, path: str = "") -> dict[str, Any]:
    """Command -> its parser (argparse has no public walk; tests may look)."""
    found: dict[str, Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                command = f"{path} {name}".strip()
                found[command] = child
                found.update(_subparsers(child, command))
    return found


def test_each_setting_flag_s_help_is_its_field_s_description() -> None:
    """Written once, in the settings model: the flag's help is the field's description,
    then its default and its variable."""
    parsers = _subparsers(build_parser())
    checked = 0
    for command, model in COMMAND_SETTINGS.items():
        fields = flat_fields(model)
        for action in parsers[command]._actions:
            if action.dest not in fields:
                continue
            path = fields[action.dest][0]
            owner: Any = model
            for part in path[:-1]:
                owner = nested_model(owner.model_fields[part].annotation)
            description = owner.model_fields[path[-1]].description
            assert description, (command, action.dest)
            assert (action.help or "").startswith(description.replace("%", "%%") + " ("), (
                command,
                action.dest,
                action.help,
            )
            checked += 1
    assert checked > 150  # every command's setting flags, not a handful
