"""The digest a reader keeps per current tool/result node (rule 5) agrees with
``json_equal``: equal digests exactly when the values are JSON-equal (key order, ``1``
and ``1.0``, booleans apart from numbers, lone surrogates)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from indexer.surface.fold import json_equal
from indexer.surface.result_shape import digest
from tests.strategies import js_text

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, 1.0, -0.0, 2.5, True, False]),
    js_text(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(js_text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


@given(values, values)
def test_equal_digests_exactly_when_json_equal(a: Any, b: Any) -> None:
    assert (digest(a) == digest(b)) == json_equal(a, b)


@given(values)
def test_key_order_and_number_forms_do_not_change_the_digest(a: Any) -> None:
    assert digest(_reordered(a)) == digest(a)
    assert digest({"n": 1, "m": [2.0]}) == digest({"m": [2], "n": 1.0})
    assert digest(True) != digest(1) and digest(None) != digest(0)
