"""Message text as a CommonMark tree the console builds DOM nodes from.

Why a tree and not HTML: the page never parses markup from a log. markdown-it-py reads
the text with raw HTML off (``<script>`` in a message is text), and the tree holds only
the tags of ``TAGS`` with the attributes ``_attrs`` lets through; the page checks the
same allowlist again as it creates elements. A link keeps its target only for
``http``, ``https`` and ``mailto``; an image becomes its alt text (a log never makes the
page fetch anything).

A node is a string (text) or ``[tag, attrs, children]``. Text of more than
``MAX_MARKDOWN`` characters is not parsed: it is one ``pre`` as it stands, so a megabyte
line (or a wide table, whose parse grows fast) costs no parse (the reader bounds a
block's text before, with a note of what it cut: ``worker.reader.blocks.bounded``).
Nodes nest at most ``MAX_DEPTH`` deep (deeper ones become their text), and a text the
parser cannot walk (emphasis nested hundreds deep) is one ``pre``.

Rendering decodes: an entity (``gh&#112;_``), an escape (``ghp\\_``) or emphasis inside
a word shows characters the log's text does not hold in a row, so a secret the
redaction did not see in the text can appear on the page. ``shown_markdown`` therefore
redacts what each top-level block *shows*: a block whose shown text holds a secret is
shown as its redacted text alone, and a link whose target holds one loses its target.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

__all__ = ["MAX_DEPTH", "MAX_MARKDOWN", "TAGS", "Node", "markdown_tree", "shown_markdown"]

Node = str | list[Any]

MAX_MARKDOWN: Final = 20_000
MAX_DEPTH: Final = 24
TAGS: Final = frozenset(
    [
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "em",
        "strong",
        "s",
        "code",
        "pre",
        "ul",
        "ol",
        "li",
        "blockquote",
        "hr",
        "br",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
    ]
)
_SAFE_HREF: Final = re.compile(r"(?i)^(https?:|mailto:)")
_LANGUAGE: Final = re.compile(r"^[\w+#.-]{1,32}$")
_ALIGN: Final = re.compile(r"text-align:(left|right|center)")

_PARSER: Final = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def markdown_tree(text: str) -> list[Node]:
    """The block nodes of ``text`` (module docstring)."""
    if len(text) > MAX_MARKDOWN:
        return [["pre", {}, [text]]]
    try:
        return _children(SyntaxTreeNode(_PARSER.parse(text)), 0)
    except RecursionError:
        return [["pre", {}, [text]]]


def text_of(nodes: list[Node]) -> str:
    """What ``nodes`` show, as text."""
    return "".join(n if isinstance(n, str) else text_of(n[2]) for n in nodes)


def shown_markdown(text: str, shown_text: Callable[[str], str]) -> tuple[list[Node], str]:
    """The tree of ``text`` with what it shows redacted (module docstring), and the text
    an export writes: ``text`` itself, or the redacted text of what it shows when a block
    had to be replaced (the Markdown would show the secret again)."""
    tree = markdown_tree(text)
    replaced = False
    for i, node in enumerate(tree):
        if isinstance(node, str):
            continue
        plain = text_of([node])
        shown = shown_text(plain)
        if shown != plain:
            tree[i] = ["pre" if node[0] == "pre" else "p", {}, [shown]]
            replaced = True
        else:
            _unlink_secrets(node, shown_text)
    if not replaced:
        return tree, text
    return tree, "\n\n".join(text_of([n]) for n in tree)


def _unlink_secrets(node: list[Any], shown_text: Callable[[str], str]) -> None:
    if node[0] == "a" and "href" in node[1] and shown_text(node[1]["href"]) != node[1]["href"]:
        node[1] = {}
    for child in node[2]:
        if not isinstance(child, str):
            _unlink_secrets(child, shown_text)


def _children(node: SyntaxTreeNode, depth: int) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        out.extend(_node(child, depth))
    return out


def _node(node: SyntaxTreeNode, depth: int) -> list[Node]:
    if depth >= MAX_DEPTH:
        return [_plain(node)]
    kind = node.type
    if kind in ("text", "text_special"):
        return [node.content]
    if kind == "softbreak":
        return ["\n"]
    if kind == "inline":
        return _children(node, depth)
    if kind in ("fence", "code_block"):
        language = node.info.split(maxsplit=1)[0] if node.info.strip() else ""
        attrs = {"lang": language} if _LANGUAGE.match(language) else {}
        return [["pre", attrs, [node.content]]]
    if kind == "code_inline":
        return [["code", {}, [node.content]]]
    if kind == "image":
        alt = _plain(node)
        return [f"[image: {alt}]" if alt else "[image]"]
    if kind == "paragraph" and node.hidden:  # a tight list's item: no <p>
        return _children(node, depth)
    tag = node.tag
    if tag not in TAGS:
        return _children(node, depth) or ([node.content] if node.content else [])
    return [[tag, _attrs(tag, node), _children(node, depth + 1)]]


def _plain(node: SyntaxTreeNode) -> str:
    """A node's text, without its structure (iterative: no depth limit applies)."""
    parts: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if not current.children:
            parts.append("\n" if current.type == "softbreak" else current.content)
        stack.extend(reversed(current.children))
    return "".join(parts)


def _attrs(tag: str, node: SyntaxTreeNode) -> dict[str, Any]:
    attrs = node.attrs
    if tag == "a":
        href = str(attrs.get("href", ""))
        return {"href": href} if _SAFE_HREF.match(href) else {}
    if tag == "ol":
        start = attrs.get("start")
        return {"start": start} if isinstance(start, int) and 0 <= start < 1 << 31 else {}
    if tag in ("th", "td"):
        found = _ALIGN.search(str(attrs.get("style", "")))
        return {"align": found.group(1)} if found else {}
    return {}
