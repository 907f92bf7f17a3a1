"""``js_stringify`` equals JavaScript ``JSON.stringify(value, null, 2)``.

``tests/data/js_vectors.json`` was produced by Node 20 (``JSON.stringify(Number(s))``) for
hand-picked and random doubles, and for strings with surrogates and controls.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.data_paths import JS_VECTORS, UPSTREAM_TOOL_SCHEMAS
from tests.strategies import js_chars
from worker.contract import jsjson
from worker.contract.jsjson import js_number, js_quote, js_stringify

VECTORS = json.loads(JS_VECTORS.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1e20, "100000000000000000000"),
        (100.0, "100"),
        (3.0, "3"),
        (-0.0, "0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2**60, "1152921504606847000"),
        (2**53, "9007199254740992"),
        (-(2**53) - 2, "-9007199254740994"),
        (10**400, "null"),
        (math.nan, "null"),
        (math.inf, "null"),
    ],
)
def test_numbers_print_as_ecmascript_number_to_string(value: float, expected: str) -> None:
    assert js_number(value) == expected


def test_numbers_match_node_vectors() -> None:
    for text, expected in VECTORS["numbers"]:
        assert js_number(float(text)) == expected, text


def test_strings_match_node_vectors() -> None:
    for units, expected in VECTORS["strings"]:
        assert js_quote("".join(map(chr, units))) == expected, units


def test_non_ascii_and_line_separators_stay_literal() -> None:
    assert js_quote("café\u2028\u2029\u007f—") == '"café\u2028\u2029\u007f—"'
    assert js_quote("\x00\x1f\b\f\n\r\t\"\\") == '"\\u0000\\u001f\\b\\f\\n\\r\\t\\"\\\\"'


def test_conformance_file_round_trips_byte_for_byte() -> None:
    text = UPSTREAM_TOOL_SCHEMAS.read_text(encoding="utf-8")
    assert js_stringify(json.loads(text)) == text


def test_layout_matches_json_stringify_with_two_spaces() -> None:
    value = {"b": [1, {}, [], {"x": None}], "a": True, "c": 1.0}
    assert js_stringify(value) == (
        '{\n  "b": [\n    1,\n    {},\n    [],\n    {\n      "x": null\n    }\n  ],'
        '\n  "a": true,\n  "c": 1\n}'
    )
    assert js_stringify(value, None) == '{"b":[1,{},[],{"x":null}],"a":true,"c":1}'


def test_key_order_is_kept() -> None:
    assert js_stringify({"z": 1, "a": 2}, None) == '{"z":1,"a":2}'


def test_deep_nesting_does_not_recurse() -> None:
    value: object = 0
    for _ in range(5000):
        value = [value]
    text = js_stringify(value, None)
    assert text == "[" * 5000 + "0" + "]" * 5000


def test_cycles_and_unknown_objects_are_rejected() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="circular"):
        js_stringify(cyclic)
    with pytest.raises(TypeError):
        js_stringify({"a": object()})


def test_shared_non_cyclic_references_are_fine() -> None:
    shared = {"k": 1}
    assert js_stringify([shared, shared], None) == '[{"k":1},{"k":1}]'


json_text = st.text(st.characters(codec="utf-8"))  # no lone surrogates
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | json_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_text, inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_without_floats_equals_python_json_layout(value: object) -> None:
    assert js_stringify(value) == json.dumps(value, indent=2, ensure_ascii=False)
    assert js_stringify(value, None) == json.dumps(
        value, ensure_ascii=False, separators=(",", ":")
    )


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_round_trip_in_the_js_shape(value: float) -> None:
    text = js_number(value)
    assert float(text) == value
    assert not text.endswith(".0")
    magnitude = abs(value)
    assert ("e" in text) == (magnitude != 0 and (magnitude >= 1e21 or magnitude < 1e-6))


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50))
def test_floats_agree_with_node(values: list[float]) -> None:
    script = "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));" \
        "process.stdout.write(JSON.stringify(v.map(x=>JSON.stringify(Number(x)))))"
    out = subprocess.run(
        ["node", "-e", script], input=json.dumps([repr(v) for v in values]),
        capture_output=True, text=True, check=True,
    ).stdout
    assert [js_number(v) for v in values] == json.loads(out)


any_text = st.text(js_chars)  # lone surrogates, and pairs held as two code points
any_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats()
    | any_text
    | st.sampled_from([2**53, -(2**53), 2**53 - 1, 1e16, 1e21, -0.0, 5e-324]),
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(any_text | st.integers(-5, 5) | st.booleans() | st.none(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=1500, deadline=None)
@given(any_values)
def test_the_orjson_shortcut_prints_what_the_walk_prints(value: object) -> None:
    """``js_stringify`` takes orjson's text only where it is the walk's, whatever the
    value holds (floats, integers beyond 2^53, lone surrogates, non-string keys)."""
    assert js_stringify(value, 2) == jsjson._walked(value, 2)


def test_an_event_without_floats_takes_the_shortcut() -> None:
    data = {"output": "a\nb \"c\" \u2028 é 😀", "ok": True, "n": [1, -2, 2**53 - 1]}
    event = {"type": "tool/result", "seq": 7, "time": 1_700_000_000_000, "data": data}
    text = jsjson._via_orjson(event)
    assert text is not None
    assert text == jsjson._walked(event, 2)
    assert jsjson._via_orjson({**event, "x": 0.5}) is None
    assert jsjson._via_orjson({**event, "x": 2**53}) is None
    assert jsjson._via_orjson({**event, "x": "\ud800"}) is None
