"""A small evaluator of the Go expressions gitleaks' rule tests build their samples with:
string literals (raw and interpreted), ``+``, ``[]string{...}``, ``map[string]string{...}``
(its values), ``append``, ``fmt.Sprintf`` with ``%s``, ``strings.Repeat``, variables, and
gitleaks' generator helpers (``utils.GenerateSampleSecret(s)``, ``secrets.NewSecret`` and the
``utils.AlphaNumeric("n")`` family). Anything else (a call of another function) raises
``Unevaluable``: the caller counts it and leaves it out.

Statements are found by Go's own rule for their end (a line ending in an identifier, a
literal or a closing bracket ends one), which is all a rule function's body needs.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from tests.redaction.regen import RegexSampleError, sample_regex

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)"""
    r"""|(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<rune>'(?:[^'\\\n]|\\.)*')"""
    r"""|(?P<ident>[A-Za-z_]\w*)|(?P<num>\d[\w.]*)|(?P<op>\.\.\.|:=|[-+*/%&|^<>=!]=?|[(){}\[\],;:.])""",
    re.S,
)


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # "str", "ident", "num", "op", "bad"
    text: str
    line: int

    def ends_statement(self) -> bool:
        """Go's semicolon insertion: a line ending in this token ends the statement."""
        return self.kind in ("str", "ident", "num", "bad") or self.text in (")", "]", "}")


def _unquote(literal: str) -> str:
    """A Go interpreted string literal's value."""
    out: Any = json.loads(
        re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", literal)
        .replace("\\'", "'")
        .replace("\\a", "\\u0007")
        .replace("\\v", "\\u000b")
    )
    return str(out)


def tokens(source: str) -> list[Tok]:
    out: list[Tok] = []
    line = 1
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup
        text = m.group()
        at = line
        line += text.count("\n")
        if kind in ("ws", "comment"):
            continue
        if kind == "raw":  # a raw string spans lines: its token is on its first
            out.append(Tok("str", text[1:-1].replace("\r", ""), at))
        elif kind == "str":
            try:
                out.append(Tok("str", _unquote(text), at))
            except ValueError:
                out.append(Tok("bad", text, at))
        elif kind == "rune":
            out.append(Tok("bad", text, at))
        else:
            out.append(Tok(str(kind), text, at))
    return out


# ---- Go expressions: a small evaluator ---------------------------------------------------


class Unevaluable(Exception):
    """An expression outside what the evaluator knows."""


@dataclass(slots=True)
class Text:
    """A string value; ``secret`` is the secret it carries when a helper placed one."""

    value: str
    secret: str | None = None


@dataclass(slots=True)
class Listed:
    items: list[Text]
    skipped: int = 0  # sample expressions left out
    exprs: int = 0  # sample expressions evaluated (one helper call gives ~25 texts)


_SIZE_HELPERS = {
    "Numeric": "[0-9]{%s}",
    "Hex": "[a-f0-9]{%s}",
    "AlphaNumeric": "[a-z0-9]{%s}",
    "AlphaNumericExtendedShort": "[a-z0-9_-]{%s}",
    "AlphaNumericExtended": r"[a-z0-9=_\-]{%s}",
    "AlphaNumericExtendedLong": r"[a-z0-9\/=_\+\-]{%s}",
}


@dataclass
class Evaluator:
    """Evaluates the expressions of one rule function (its variables, the package's)."""

    templates: list[str]
    rng: random.Random
    scope: dict[str, Any] = field(default_factory=dict)
    toks: list[Tok] = field(default_factory=list)
    at: int = 0

    # -- token helpers
    def peek(self, ahead: int = 0) -> Tok | None:
        i = self.at + ahead
        return self.toks[i] if i < len(self.toks) else None

    def take(self, text: str | None = None) -> Tok:
        tok = self.peek()
        if tok is None or (text is not None and tok.text != text):
            raise Unevaluable(f"expected {text!r} at {tok}")
        self.at += 1
        return tok

    def skip_balanced(self) -> None:
        """Skip one expression whatever it holds (to its ``,``, its closing bracket or the
        end of its statement)."""
        depth = 0
        while (tok := self.peek()) is not None:
            if tok.kind == "op" and tok.text in "([{":
                depth += 1
            elif tok.kind == "op" and tok.text in ")]}":
                if depth == 0:
                    return
                depth -= 1
            elif tok.kind == "op" and tok.text == "," and depth == 0:
                return
            self.at += 1
            nxt = self.peek()
            if depth == 0 and nxt is not None and nxt.line > tok.line and tok.ends_statement():
                return

    # -- expressions
    def expr(self) -> Any:
        value = self.operand()
        while (tok := self.peek()) is not None and tok.text == "+" and tok.kind == "op":
            self.take("+")
            right = self.operand()
            if not isinstance(value, Text) or not isinstance(right, Text):
                raise Unevaluable("+ of non-strings")
            value = Text(value.value + right.value, value.secret or right.secret)
        return value

    def operand(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise Unevaluable("end of input")
        if tok.kind == "str":
            self.at += 1
            return Text(tok.text)
        if tok.kind == "op" and tok.text == "(":
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        if tok.kind == "op" and tok.text == "[":
            self.take("[")
            self.take("]")
            self.take("string")
            return self.composite(keyed=False)
        if tok.kind == "ident" and tok.text == "map":
            self.take("map")
            self.take("[")
            self.take("string")
            self.take("]")
            self.take("string")
            return self.composite(keyed=True)
        if tok.kind == "ident":
            name = self.qualified()
            nxt = self.peek()
            if nxt is not None and nxt.text == "(":
                return self.call(name)
            if name == "nil":
                return Listed([])
            if name in self.scope:
                value = self.scope[name]
                if isinstance(value, Unevaluable):
                    raise value
                return value
            raise Unevaluable(f"unknown name {name}")
        raise Unevaluable(f"unexpected {tok}")

    def qualified(self) -> str:
        parts = [self.take().text]
        while (tok := self.peek()) is not None and tok.text == "." and self.peek(1) is not None:
            nxt = self.peek(1)
            assert nxt is not None
            if nxt.kind != "ident":
                break
            self.take(".")
            parts.append(self.take().text)
        return ".".join(parts)

    def composite(self, keyed: bool) -> Listed:
        """``{e, e, ...}`` (or ``{k: v, ...}``: the values)."""
        self.take("{")
        out = Listed([])
        while (tok := self.peek()) is not None and tok.text != "}":
            start = self.at
            try:
                if keyed:
                    self.expr()
                    self.take(":")
                value = self.expr()
                if not isinstance(value, Text):
                    raise Unevaluable("element is no string")
                out.items.append(value)
                out.exprs += 1
            except Unevaluable:
                self.at = start
                self.skip_balanced()
                out.skipped += 1
            if (tok := self.peek()) is not None and tok.text == ",":
                self.take(",")
        self.take("}")
        return out

    def args(self) -> list[tuple[Any, bool]]:
        """Call arguments, each with whether it was spread (``x...``)."""
        self.take("(")
        out: list[tuple[Any, bool]] = []
        while (tok := self.peek()) is not None and tok.text != ")":
            start = self.at
            try:
                value: Any = self.expr()
            except Unevaluable as e:
                self.at = start
                self.skip_balanced()
                value = e
            spread = False
            if (tok := self.peek()) is not None and tok.text == "...":
                self.take("...")
                spread = True
            out.append((value, spread))
            if (tok := self.peek()) is not None and tok.text == ",":
                self.take(",")
        self.take(")")
        return out

    def call(self, name: str) -> Any:
        args = self.args()
        values = [v for v, _ in args]
        short = name.rsplit(".", 1)[-1]
        if name == "append":
            base = values[0]
            if not isinstance(base, Listed):
                raise Unevaluable("append to a non-list")
            out = Listed(list(base.items), base.skipped, base.exprs)
            for value, spread in args[1:]:
                if isinstance(value, Unevaluable):
                    out.skipped += 1
                elif spread and isinstance(value, Listed):
                    out.items += value.items
                    out.skipped += value.skipped
                    out.exprs += value.exprs
                elif isinstance(value, Text):
                    out.items.append(value)
                    out.exprs += 1
                else:
                    out.skipped += 1
            return out
        for value in values:
            if isinstance(value, Unevaluable):
                raise value
        if name.startswith("utils.") and short in _SIZE_HELPERS:
            return Text(_SIZE_HELPERS[short] % _text(values[0]))
        if name == "utils.Hex8_4_4_4_12":
            return Text(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
        if name == "secrets.NewSecret":
            try:
                drawn = sample_regex(_text(values[0]), self.rng)
            except RegexSampleError as e:
                raise Unevaluable(str(e)) from e
            return Text(drawn, drawn)
        if name == "utils.GenerateSampleSecret":
            secret = _text(values[1])
            return Text(f'{_text(values[0])}_api_token = "{secret}"', secret)
        if name == "utils.GenerateSampleSecrets":
            ident, secret = _text(values[0]), _text(values[1])
            return Listed([Text(_fill(t, ident, secret), secret) for t in self.templates], exprs=1)
        if name == "fmt.Sprintf":
            pattern = _text(values[0])
            texts = [v for v in values[1:] if isinstance(v, Text)]
            if len(texts) != len(values) - 1 or re.search(r"%[^s%]", pattern):
                raise Unevaluable("Sprintf with non-%s verbs")
            filled = pattern.replace("%%", "\0") % tuple(t.value for t in texts)
            return Text(
                filled.replace("\0", "%"), next((t.secret for t in texts if t.secret), None)
            )
        if name == "strings.Repeat":
            return Text(_text(values[0]) * int(_text(values[1])))
        raise Unevaluable(f"call of {name}")


def _text(value: Any) -> str:
    if not isinstance(value, Text):
        raise Unevaluable("not a string")
    return value.value


def _fill(template: str, ident: str, secret: str) -> str:
    """Go's ``strings.NewReplacer("{i}", id, "{I}", ID, "{s}", secret)``: one pass."""
    table = {"{i}": ident, "{I}": ident.upper(), "{s}": secret}
    return re.sub(r"\{[iIs]\}", lambda m: table[m.group()], template)
