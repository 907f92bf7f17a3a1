"""JavaScript whitespace helpers (SPEC §0, §13.1)."""

from __future__ import annotations

import re

from indexer.surface.jstext import (
    JS_WHITESPACE,
    JS_WHITESPACE_CLASS,
    js_collapse,
    js_split,
    js_trim,
)

SPEC_WS = [
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680,
    *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
]


def test_whitespace_constant_is_exactly_the_spec_set() -> None:
    assert sorted(ord(c) for c in JS_WHITESPACE) == sorted(SPEC_WS)
    assert len(set(JS_WHITESPACE)) == len(JS_WHITESPACE)


def test_whitespace_class_matches_exactly_the_set_over_the_bmp_and_beyond() -> None:
    one = re.compile(JS_WHITESPACE_CLASS)
    matched = [cp for cp in range(0x110000) if one.fullmatch(chr(cp))]
    assert matched == sorted(SPEC_WS)


def test_python_whitespace_differences_are_not_whitespace_here() -> None:
    for ch in ("\u0085", "\u001c", "\u001d", "\u001e", "\u001f", "\u180e", "\u200b"):
        assert js_trim(f"{ch}x{ch}") == f"{ch}x{ch}"
        assert js_split(f"a{ch}b") == [f"a{ch}b"]
    assert js_trim("\ufeff x \ufeff") == "x"


def test_trim_removes_only_the_ends() -> None:
    assert js_trim("\t\n visible \u3000\u2028") == "visible"
    assert js_trim("a  b") == "a  b"
    assert js_trim(" \u00a0 ") == ""
    assert js_trim("") == ""


def test_collapse_trims_and_folds_runs_to_one_space() -> None:
    assert js_collapse("  hello \n\t  (ai)+ \u3000") == "hello (ai)+"
    assert js_collapse("Alpha\n beta") == "Alpha beta"
    assert js_collapse("a\u200bb") == "a\u200bb"
    assert js_collapse(" \n ") == ""


def test_split_never_yields_empty_parts() -> None:
    assert js_split("  alpha\n beta  ") == ["alpha", "beta"]
    assert js_split("one") == ["one"]
    assert js_split("") == []
    assert js_split(" \t\ufeff ") == []
    assert js_split("a\u2000\u2001b\u00a0c") == ["a", "b", "c"]
