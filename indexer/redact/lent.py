"""The patterns the detect-secrets library (Yelp, Apache-2.0) lends to ``rules.toml``, kept
as data beside it (``lent_patterns.json``: each plugin's denylist, pattern text and flags,
and the library version they were read from).

Importing any plugin of the library runs its package's start-up (its scanner, filters and
their dependencies): about 0.1-0.2 s of CPU in every process that redacts, which for a
``sessionq call`` or a short ingest is most of the redaction's cost. So a process compiles
the lent patterns from this file, and imports the library only when the installed
version is not the one the file was read from (then the library's own patterns are used:
never a stale rule). ``tests/redaction/test_lent_patterns.py`` checks the file against the
installed library; ``python -m worker.devtools.lent_patterns`` writes it again after an
upgrade.
"""

from __future__ import annotations

import functools
import importlib
import re
from importlib import metadata, resources
from typing import Any, Final

import orjson

__all__ = ["FILE", "LIBRARY", "extract", "lent_patterns"]

LIBRARY: Final = "detect-secrets"
FILE: Final = "lent_patterns.json"


def _plugin_denylist(plugin_ref: str) -> list[tuple[str, int]]:
    """``module:Class`` -> the plugin's denylist as (pattern, flags), from the library."""
    module_name, class_name = plugin_ref.split(":")
    plugin: Any = getattr(importlib.import_module(module_name), class_name)
    return [(p.pattern, p.flags) for p in plugin.denylist]


def extract(plugin_refs: list[str]) -> dict[str, Any]:
    """What ``lent_patterns.json`` holds for these plugins, read from the installed library."""
    return {
        "library": LIBRARY,
        "version": metadata.version(LIBRARY),
        "plugins": {ref: _plugin_denylist(ref) for ref in sorted(set(plugin_refs))},
    }


@functools.cache
def _stored() -> dict[str, Any]:
    raw: dict[str, Any] = orjson.loads(
        resources.files("indexer.redact").joinpath(FILE).read_bytes()
    )
    return raw


def lent_patterns(plugin_ref: str) -> tuple[re.Pattern[str], ...]:
    """The compiled denylist of plugin ``module:Class``: from the stored file when it was
    read from the installed version of the library and names the plugin, else from the
    library itself."""
    stored = _stored()
    entries = stored["plugins"].get(plugin_ref)
    if entries is None or stored["version"] != metadata.version(LIBRARY):
        entries = _plugin_denylist(plugin_ref)
    return tuple(re.compile(pattern, flags) for pattern, flags in entries)
