"""Message text as the console's Markdown tree: only allowlisted tags and attributes,
whatever the text; raw HTML, scripts and unsafe links stay text."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.reader.markdown import MAX_MARKDOWN, TAGS, markdown_tree

ATTRS = {"a": {"href"}, "ol": {"start"}, "pre": {"lang"}, "th": {"align"}, "td": {"align"}}


def check(nodes: list[Any], depth: int = 0) -> None:
    assert depth < 64
    for node in nodes:
        if isinstance(node, str):
            continue
        tag, attrs, children = node
        assert tag in TAGS, tag
        assert set(attrs) <= ATTRS.get(tag, set()), (tag, attrs)
        if "href" in attrs:
            assert re.match(r"(?i)^(https?:|mailto:)", attrs["href"]), attrs
        check(children, depth + 1)


PIECES = st.sampled_from(
    [
        "<script>",
        "</script>",
        "<img src=x onerror=alert(1)>",
        "[a](javascript:x)",
        "[b](",
        "](data:text/html,x)",
        "![i](http://e/p.png)",
        "```",
        "~~~",
        "    ",
        "> ",
        "- ",
        "1. ",
        "| a |",
        "|---|",
        "*",
        "_",
        "`",
        "\n",
        "\n\n",
        "&lt;",
        "&#x3C;",
        "\\",
        "<a href=x>",
        "https://e.com",
        "mailto:a@b",
        "#",
        "<!--",
        "-->",
        "\u202e",
        "\x00",
        "x",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_any_text_makes_only_allowlisted_nodes(text: str) -> None:
    check(markdown_tree(text))


def text_of(nodes: list[Any]) -> str:
    return "".join(n if isinstance(n, str) else text_of(n[2]) for n in nodes)


def test_html_and_unsafe_links_are_text() -> None:
    tree = markdown_tree('<b id="bold">x</b> [go](javascript:alert(1)) ![p](http://h/p.png)')
    check(tree)
    assert text_of(tree) == '<b id="bold">x</b> [go](javascript:alert(1)) [image: p]'
    assert markdown_tree("[ok](https://example.com/a)") == [
        ["p", {}, [["a", {"href": "https://example.com/a"}, ["ok"]]]]
    ]


def test_code_keeps_its_language_and_a_hostile_info_string_is_dropped() -> None:
    assert markdown_tree("```py\nx = 1\n```") == [["pre", {"lang": "py"}, ["x = 1\n"]]]
    assert markdown_tree('```"><script>\nx\n```') == [["pre", {}, ["x\n"]]]


def test_deep_nesting_is_bounded() -> None:
    check(markdown_tree("> " * 5000 + "x"))
    check(markdown_tree("- " * 5000 + "x"))


def test_a_huge_text_is_one_pre_not_parsed() -> None:
    text = "# h\n" + "x" * MAX_MARKDOWN
    assert markdown_tree(text) == [["pre", {}, [text]]]
