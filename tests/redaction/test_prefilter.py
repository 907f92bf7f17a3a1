"""The read-time keyword prefilter (``indexer.redact.policy._may_hold``): it picks the
events a reader walks for secrets, and must never leave out one that the walk would
redact — whatever case, escapes or characters spell the keyword."""

from __future__ import annotations

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
        if automaton.keyword_ends(text) or b"\\u" in event.raw or b"\\/" in event.raw:
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


@st.composite
def _spelled(draw: st.DrawFn) -> str:
    """A keyword in any case, its k and i possibly spelled with the characters whose
    lower case they are, inside other text (non-ASCII, escapes, whitespace)."""
    keyword = draw(st.sampled_from(_KEYWORDS))
    letters = [draw(st.sampled_from(_SPELLINGS.get(c, [c, c.upper()]))) for c in keyword]
    around = st.text(alphabet=st.sampled_from(["x", " ", "é", "😀", "\\", "/", "\n"]), max_size=8)
    return draw(around) + "".join(letters) + draw(around)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_spelled(), st.text(max_size=20)), min_size=1, max_size=6))
def test_the_prefilter_leaves_out_no_event_the_decoded_text_scan_would_pick(
    texts: list[str],
) -> None:
    events = [_event(t, i) for i, t in enumerate(texts)]
    assert _reference(events) <= _may_hold(events)
