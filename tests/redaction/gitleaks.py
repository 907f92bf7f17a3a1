"""gitleaks' own rule tests as samples, read from its Go module at test time (nothing of it
is copied into this repository).

gitleaks (MIT) validates each rule of its default config against true positives (``tps``)
and false positives (``fps``) written in ``cmd/generate/config/rules/*.go``: literal
strings, and strings its generator helpers build (``utils.GenerateSampleSecrets(id,
secret)`` puts one secret in ~25 source-code contexts; ``secrets.NewSecret(regex)`` draws
a random string from a regex). ``samples()`` evaluates those Go expressions
(``tests.redaction.goeval``; the helpers' templates read from the module's own
``utils/generate.go``); a regex is sampled with a seeded generator, so the samples are the
same on every run. An expression it cannot evaluate (a call of another function) is
counted and left out.

The module comes from the Go module proxy (``go mod download``) into the Go module
cache under ``cache_dir()``; ``FixturesUnavailableError`` says in one line why it could
not be had.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.redaction.goeval import Evaluator, Listed, Tok, Unevaluable, tokens

MODULE = "github.com/zricethezav/gitleaks/v8"
VERSION = "v8.30.1"
RULES_DIR = "cmd/generate/config/rules"
GENERATE_GO = "cmd/generate/config/utils/generate.go"


class FixturesUnavailableError(RuntimeError):
    """A scanner's fixtures could not be obtained (no Go, no network, a changed layout)."""


def cache_dir() -> Path:
    """Where fetched fixtures are kept: outside the repository."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sessionq-tests"


def module_dir() -> Path:
    """The unpacked gitleaks module (downloaded once into ``cache_dir()/gomod``)."""
    go = shutil.which("go")
    if go is None:
        raise FixturesUnavailableError(
            f"gitleaks fixtures: the `go` command is not on PATH; it fetches {MODULE}@{VERSION} "
            "from the Go module proxy (install Go, e.g. apt-get install golang-go)"
        )
    cache_dir().mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GOMODCACHE": str(cache_dir() / "gomod"),
        "GOFLAGS": "-modcacherw",
        "GO111MODULE": "on",
    }
    try:
        out = subprocess.run(
            [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cache_dir(),
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FixturesUnavailableError(f"gitleaks fixtures: go mod download failed: {e}") from e
    try:
        info = json.loads(out.stdout) if out.stdout.strip() else {}
    except ValueError:
        info = {}
    where = info.get("Dir")
    if out.returncode != 0 or not where or not (Path(where) / RULES_DIR).is_dir():
        said = (info.get("Error") or out.stderr.strip() or "no module directory").splitlines()
        raise FixturesUnavailableError(
            f"gitleaks fixtures: could not fetch {MODULE}@{VERSION} from the Go module proxy: "
            f"{said[-1] if said else 'unknown error'}"
        )
    return Path(where)


# ---- rules, their tps and fps -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    source: str  # the scanner: "gitleaks"
    rule: str  # the scanner's rule id
    text: str
    secret: str | None  # the secret, when a helper placed it; None: somewhere in the text
    positive: bool  # a true positive of the rule (else one of its false positives)


@dataclass(frozen=True, slots=True)
class Harvest:
    samples: list[Sample]
    taken: int  # sample expressions evaluated (a helper's ~25 contexts count once)
    skipped: int  # sample expressions left out (calls of other functions)
    rules: int  # rules whose tests were read


def _templates(root: Path) -> list[str]:
    """The contexts of ``utils.GenerateSampleSecrets`` (its ``samples`` map's values)."""
    toks = tokens((root / GENERATE_GO).read_text())
    for i, tok in enumerate(toks[:-1]):
        if tok.text == "samples" and toks[i + 1].text == ":=":
            listed = Evaluator([], random.Random(0), toks=toks, at=i + 2).expr()
            if isinstance(listed, Listed) and listed.items:
                return [t.value for t in listed.items]
    raise FixturesUnavailableError(f"gitleaks fixtures: no sample templates in {GENERATE_GO}")


def _functions(toks: list[Tok]) -> Iterator[tuple[str, int, int]]:
    """(name, first body token, closing brace) of every top-level function."""
    i = 0
    while i < len(toks) - 1:
        if toks[i].text != "func" or toks[i + 1].kind != "ident":
            i += 1
            continue
        j = i + 2
        while j < len(toks) and toks[j].text != "{":
            j += 1
        depth, k = 0, j
        while k < len(toks):
            depth += {"{": 1, "}": -1}.get(toks[k].text, 0)
            if depth == 0:
                break
            k += 1
        yield toks[i + 1].text, j + 1, k
        i = k + 1


Validated = Callable[[list[tuple[Any, bool]]], None]


def _statements(ev: Evaluator, lo: int, hi: int, on_validate: Validated) -> None:
    """Evaluate the statements starting in ``toks[lo:hi]`` that bind a name (``x := e``,
    ``x = e``, the names of a ``var (...)`` block) into ``ev.scope``, and hand the
    arguments of ``utils.Validate(...)`` to ``on_validate``."""
    toks = ev.toks
    i = lo
    while i < hi:
        tok, nxt = toks[i], toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind == "ident" and nxt is not None and nxt.text in (":=", "="):
            ev.at = i + 2
            try:
                ev.scope[tok.text] = ev.expr()
            except Unevaluable as e:
                ev.at = i + 2
                ev.skip_balanced()
                ev.scope[tok.text] = e
            i = max(ev.at, i + 2)
        elif tok.text in ("Validate", "ValidateWithPaths") and i > 0 and toks[i - 1].text == ".":
            ev.at = i + 1
            on_validate(ev.args())
            i = ev.at
        else:
            i += 1


def _package_scope(name: str, toks: list[Tok], templates: list[str], scope: dict[str, Any]) -> None:
    """Add the file's top-level ``var`` bindings to ``scope`` (rule functions share them)."""
    bodies = [(lo, hi) for _, lo, hi in _functions(toks)]
    for i, tok in enumerate(toks[:-1]):
        if tok.text != "var" or any(lo <= i <= hi for lo, hi in bodies):
            continue
        ev = Evaluator(templates, random.Random(f"{name}:var:{i}"), scope, toks)
        if toks[i + 1].text == "(":
            depth, end = 0, i + 1
            while end < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[end].text, 0)
                if depth == 0:
                    break
                end += 1
            _statements(ev, i + 2, end, lambda _: None)
        else:
            _statements(ev, i + 1, i + 2, lambda _: None)


def _rule_id(toks: list[Tok], lo: int, hi: int) -> str | None:
    for k in range(lo, hi - 2):
        if toks[k].text == "RuleID" and toks[k + 1].text == ":" and toks[k + 2].kind == "str":
            return toks[k + 2].text
    return None


def samples() -> Harvest:
    """Every sample of every rule test of the pinned gitleaks version: the arguments of
    the last ``Validate`` call of each function that defines a rule."""
    root = module_dir()
    templates = _templates(root)
    files = {f.name: tokens(f.read_text()) for f in sorted((root / RULES_DIR).glob("*.go"))}
    package: dict[str, Any] = {}
    for name, toks in files.items():
        _package_scope(name, toks, templates, package)
    out: list[Sample] = []
    taken = skipped = rules = 0
    for name, toks in files.items():
        for function, lo, hi in _functions(toks):
            rule_id = _rule_id(toks, lo, hi)
            if rule_id is None:
                continue
            ev = Evaluator(templates, random.Random(f"{name}:{function}"), dict(package), toks)
            calls: list[list[tuple[Any, bool]]] = []
            _statements(ev, lo, hi, calls.append)
            if not calls:
                continue
            rules += 1
            for (value, _spread), positive in zip(calls[-1][1:3], (True, False), strict=False):
                if isinstance(value, Listed):
                    taken += value.exprs
                    skipped += value.skipped
                    out += [
                        Sample("gitleaks", rule_id, t.value, t.secret, positive)
                        for t in value.items
                    ]
                elif isinstance(value, Unevaluable):
                    skipped += 1
    return Harvest(out, taken, skipped, rules)
