"""The secret rules, loaded once per process from ``rules.toml`` beside this module.

A rule's regex is its own (Python ``re`` syntax) or a pattern the detect-secrets library
(Apache-2.0) ships in one of its plugins' ``denylist``; ``rules.toml`` says which and
documents every field. ``ruleset_digest()`` names the rule set: the file's bytes, the
library's version and the text and flags of every pattern it lends. The data dir records
the digest its index was built with (``indexer.redact.state``), so a changed rule set
re-indexes on the writer's first open and readers of another rule set refuse the dir until
then, as they do for another index format.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata, resources
from typing import Any, Final

from indexer.redact.lent import LIBRARY, lent_patterns

__all__ = ["CHECKS", "Rule", "lent_plugins", "load_rules", "ruleset_digest"]

_DIGITS_OR_SYMBOLS = re.compile(r"[\d!@#$%^&*~+/=]")
_LETTERS = re.compile(r"[A-Za-z]")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.@%+-]*)+")
_RANDOM_SEGMENT = re.compile(r"(?=[^/]*[a-z])(?=[^/]*[A-Z])(?=[^/]*\d)[^/]{16,}")


def _file_path(secret: str) -> bool:
    """Whether ``secret`` reads as a file path (``/run/secrets/db``, ``~/.aws/config``):
    slash-separated names none of which is a random run of 16 or more characters mixing
    upper case, lower case and digits, as base64 starting with a slash is."""
    if _PATH.fullmatch(secret) is None:
        return False
    return not any(_RANDOM_SEGMENT.fullmatch(part) for part in secret.split("/"))


def _looks_random(secret: str) -> bool:
    """A generic assignment's value is a secret only if it mixes letters with digits or
    symbols: identifiers, words, dotted paths (``settings.SECRET_KEY``, ``get_token``) and
    file paths do not."""
    return (
        _DIGITS_OR_SYMBOLS.search(secret) is not None
        and _LETTERS.search(secret) is not None
        and not _file_path(secret)
    )


def _formally_valid_jwt(secret: str) -> bool:
    """Header and payload decode to JSON. The library is imported with the rules that
    use it (``load_rules``), never with this module: a process that redacts nothing
    (``off``, or a command that reads no events) never loads it."""
    from detect_secrets.plugins.jwt import JwtTokenDetector

    valid: bool = JwtTokenDetector.is_formally_valid(secret)
    return valid


CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "jwt": _formally_valid_jwt,
    "random": _looks_random,
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule (fields as ``rules.toml`` documents them)."""

    id: str
    patterns: tuple[re.Pattern[str], ...]
    keywords: tuple[str, ...]
    group: int = 0
    entropy: float = 0.0
    word_edges: bool = False
    extend: re.Pattern[str] | None = None
    before: re.Pattern[str] | None = None
    check: Callable[[str], bool] | None = None
    allow: tuple[re.Pattern[str], ...] = ()
    anchored: bool = False
    generic: bool = False


def _library_patterns(ref: str) -> tuple[re.Pattern[str], ...]:
    """``module:Class:index`` (or ``:*``) -> the plugin's compiled denylist entries
    (``indexer.redact.lent``: kept as data, the library imported only when they are stale)."""
    plugin_ref, _, which = ref.rpartition(":")
    denylist = lent_patterns(plugin_ref)
    return denylist if which == "*" else (denylist[int(which)],)


def _regex(entry: dict[str, Any], shapes: dict[str, str]) -> str | None:
    """A rule's own regex: ``regex``, or its ``shape`` with ``{names}`` replaced by its
    ``names`` (one syntax of assignment, written once, for rules that differ in the names
    they take and the thresholds they apply); None when it has neither."""
    if "shape" in entry:
        return shapes[str(entry["shape"])].replace("{names}", str(entry["names"]))
    return None if "regex" not in entry else str(entry["regex"])


def _rule(entry: dict[str, Any], shapes: dict[str, str]) -> Rule:
    """The library's patterns first (``pattern``), then the rule's own regex: a rule may
    have both when the library's pattern covers only some of a provider's forms."""
    patterns: tuple[re.Pattern[str], ...] = ()
    if "pattern" in entry:
        patterns = _library_patterns(str(entry["pattern"]))
    own = _regex(entry, shapes)
    if own is not None:
        patterns += (re.compile(own),)
    extend = entry.get("extend")
    before = entry.get("before")
    check = entry.get("check")
    return Rule(
        id=str(entry["id"]),
        patterns=patterns,
        keywords=tuple(str(k) for k in entry["keywords"]),
        group=int(entry.get("group", 0)),
        entropy=float(entry.get("entropy", 0.0)),
        word_edges=entry.get("edges") == "word",
        extend=None if extend is None else re.compile(f"(?:{extend})+"),
        before=None if before is None else re.compile(str(before)),
        check=None if check is None else CHECKS[str(check)],
        allow=tuple(re.compile(str(a)) for a in entry.get("allow", ())),
        anchored=bool(entry.get("anchor", False)),
        generic=bool(entry.get("generic", False)),
    )


def _rules_file() -> bytes:
    return resources.files("indexer.redact").joinpath("rules.toml").read_bytes()


def lent_plugins() -> list[str]:
    """The ``module:Class`` of every library plugin ``rules.toml`` takes a pattern from."""
    data = tomllib.loads(_rules_file().decode())
    return sorted(
        {str(e["pattern"]).rpartition(":")[0] for e in data["rules"] if "pattern" in e}
    )


@functools.cache
def load_rules() -> tuple[Rule, ...]:
    """Every rule of ``rules.toml``, compiled (once per process)."""
    data = tomllib.loads(_rules_file().decode())
    shapes = {str(k): str(v) for k, v in data.get("shapes", {}).items()}
    return tuple(_rule(entry, shapes) for entry in data["rules"])


@functools.cache
def ruleset_digest() -> str:
    """``<file version>-<sha256 prefix>`` of the rule file, the library's version and the
    patterns it lends (a library release that changes a pattern changes the digest)."""
    raw = _rules_file()
    h = hashlib.sha256(raw)
    h.update(f"{LIBRARY}=={metadata.version(LIBRARY)}".encode())
    for rule in load_rules():
        for pattern in rule.patterns:
            h.update(f"\0{rule.id}\0{pattern.flags}\0{pattern.pattern}".encode())
    version = tomllib.loads(raw.decode()).get("version", "0")
    return f"{version}-{h.hexdigest()[:16]}"
