"""The read-time keyword prefilter (``indexer.redact.policy._may_hold``): it picks the
events a reader walks for secrets, and must never leave out one that the walk would
redact — whatever case, escapes or characters spell the keyword, wherever in the JSON
it stands."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.model import SessionEvent
from indexer.redact import Redaction
from indexer.redact.policy import _may_hold, detector

SECRET = "Zq8vN3rT6yWp1sLkQ9xx"


def _event(text: str, seq: int = 0) -> SessionEvent:
    content = [{"type": "text", "text": text}]
    return SessionEvent.from_obj(
        {"type": "user/message", "seq": seq, "time": 1, "data": {"content": content}}
    )


def _reference(events: list[SessionEvent]) -> set[int]:
    """The events holding a keyword in their decoded, lower-cased JSON text."""
    automaton = detector()
    out = set()
    for i, event in enumerate(events):
        text = event.raw.decode("utf-8", "surrogateescape").lower()
        if automaton.keyword_spans(text) or b"\\u" in event.raw or b"\\/" in event.raw:
            out.add(i)
    return out


def test_every_keyword_is_lower_case_ascii() -> None:
    """The prefilter scans lower-cased text: it finds only lower-case keywords."""
    keywords = [k for rule in detector().rules for k in rule.keywords]
    assert keywords and all(k.isascii() and k == k.lower() for k in keywords)


def test_keywords_spelled_with_characters_whose_lower_case_is_ascii_are_redacted() -> None:
    """U+212A (Kelvin sign) lower-cases to ``k`` and U+0130 to ``i`` plus a dot: the
    walk's matching finds ``api_Key`` and ``İD_TOKEN`` assignments, so the prefilter
    (which scans the lower-cased text) must not leave such events out."""
    texts = [
        f"api_\u212aey = '{SECRET}'",
        f"secret_\u212aey: {SECRET}",
        f"\u0130D_TOKEN={SECRET}",
        f"PASSWORD = '{SECRET}'",
    ]
    events = [_event(t, i) for i, t in enumerate(texts)]
    assert _may_hold(events) == set(range(len(texts)))
    for shown in Redaction("on").events(events):
        assert SECRET not in shown.raw.decode(), shown.raw


_KEYWORDS = sorted({k for rule in detector().rules for k in rule.keywords})
_SPELLINGS = {"k": ["k", "K", "\u212a"], "i": ["i", "I", "\u0130"]}


_NOISE = ("x", " ", "é", "😀", "\\", "/", "\n")


@st.composite
def _spelled(draw: st.DrawFn, noise: tuple[str, ...] = _NOISE) -> str:
    """A keyword in any case, its k and i possibly spelled with the characters whose
    lower case they are, inside other text (non-ASCII, escapes, whitespace)."""
    keyword = draw(st.sampled_from(_KEYWORDS))
    letters = [draw(st.sampled_from(_SPELLINGS.get(c, [c, c.upper()]))) for c in keyword]
    around = st.text(alphabet=st.sampled_from(noise), max_size=8)
    return draw(around) + "".join(letters) + draw(around)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_spelled(), st.text(max_size=20)), min_size=1, max_size=6))
def test_the_prefilter_leaves_out_no_event_the_decoded_text_scan_would_pick(
    texts: list[str],
) -> None:
    events = [_event(t, i) for i, t in enumerate(texts)]
    assert _reference(events) <= _may_hold(events)


def _walk_changes(event: SessionEvent) -> bool:
    return Redaction("on")._walked(event, Counter()) is not event


def _data_event(data: Any, seq: int = 0) -> SessionEvent:
    return SessionEvent.from_obj({"type": "assistant/chunk", "seq": seq, "time": 1, "data": data})


def test_a_keyword_only_in_names_of_numbers_is_not_walked() -> None:
    """A usage record (``"inputTokens": 10``, ``"cache_read_input_tokens": 0``) holds
    ``token`` in every event of a turn; its names are never tested, so the event is not
    walked. The same name with a string value is."""
    usage = _data_event({"usage": {"inputTokens": 10, "outputTokens": 5, "key": None}})
    spaced = SessionEvent.from_obj(
        usage.obj,
        b'{"type":"assistant/chunk","seq":1,"time":1,"data":{"usage": {\n'
        b' "input_tokens" :\t10, "Cache_Read_Input_Tokens": [1], "x_token": {"a": true}}}}',
    )
    named = _data_event({"usage": {"api_token": SECRET}}, 2)
    in_value = _data_event({"text": "the token is here"}, 3)
    in_array = _data_event({"list": [0, "token", 1]}, 4)
    escaped = _data_event({'a\\"token': 1}, 5)  # the quote before the keyword is escaped
    assert _reference([usage]) == {0}
    assert _may_hold([usage, spaced, named, in_value, in_array, escaped]) == {2, 3, 4, 5}
    assert _walk_changes(named)


def _outside_strings(keyword: str) -> bool:
    """Whether ``keyword`` may stand in JSON text outside every string: in a run of
    numbers, literals, punctuation and spaces (an over-approximation: a number's
    characters in any order)."""
    free = set("0123456789+-.eE,:[]{} \t\n\r")
    literals = ("true", "false", "null")
    states: set[tuple[str, int]] = {("", 0)}  # ("", 0): a free character or a start
    for n, c in enumerate(keyword):
        after_token = n == 0 or any(w == "" or i == len(w) - 1 for w, i in states)
        nxt: set[tuple[str, int]] = set()
        if c in free and after_token:
            nxt.add(("", 0))
        for w in literals:
            for i, letter in enumerate(w):
                if letter == c and (n == 0 or (i == 0 and after_token) or (w, i - 1) in states):
                    nxt.add((w, i))
        if not nxt:
            return False
        states = nxt
    return True


def test_no_keyword_can_stand_outside_a_json_string() -> None:
    """``_names_no_string`` takes the quotes nearest a keyword for its string's: sound
    only while no keyword can occur between strings."""
    assert _outside_strings("1e5") and _outside_strings("e,n") and _outside_strings("lse")
    assert not _outside_strings("a3t")
    assert not [k for k in _KEYWORDS if _outside_strings(k) or '"' in k or "\\" in k]


# Text whose JSON holds no ``\\u`` or ``\\/`` (events holding one are walked whole): only
# the keywords' places decide what the prefilter picks.
_PLAIN = st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\\")
_PLAIN_SPELLED = _spelled(tuple(c for c in _NOISE if c != "\\"))
_NAMES = st.one_of(
    _PLAIN_SPELLED,
    st.text(_PLAIN, max_size=6),
    st.sampled_from(["inputTokens", "api_key", "password", "token", "Secret", "x"]),
)
_LEAVES = st.one_of(
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just(SECRET),
    st.builds(lambda k: f"{k}={SECRET}", _PLAIN_SPELLED),
    st.builds(lambda k: f"{k}: {SECRET}", _PLAIN_SPELLED),
    st.text(_PLAIN, max_size=12),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_NAMES, inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.dictionaries(_NAMES, _VALUES, min_size=1, max_size=4), min_size=1, max_size=5))
def test_the_prefilter_leaves_out_no_event_the_walk_would_change(datas: list[Any]) -> None:
    events = [_data_event(d, i) for i, d in enumerate(datas)]
    changed = {i for i, e in enumerate(events) if _walk_changes(e)}
    assert changed <= _may_hold(events)
