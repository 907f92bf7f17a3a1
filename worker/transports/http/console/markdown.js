// Message text as DOM nodes from the server's Markdown tree (worker/reader/markdown.py).
// Nothing is parsed as markup here: every node is created with createElement and every
// string set as a text node. The tags and attributes are checked again against the same
// allowlist the server applies, so an answer that held anything else shows it as text.

const TAGS = new Set(
  "p h1 h2 h3 h4 h5 h6 em strong s code pre ul ol li blockquote hr br table thead tbody tr th td a".split(" "),
);
const SAFE_HREF = /^(https?:|mailto:)/i;
const ALIGN = new Set(["left", "right", "center"]);
const MAX_DEPTH = 64;

function element(tag, attrs, kids, depth) {
  const node = document.createElement(tag);
  if (tag === "a") {
    if (typeof attrs.href === "string" && SAFE_HREF.test(attrs.href)) {
      node.href = attrs.href;
      node.rel = "noopener noreferrer nofollow";
      node.target = "_blank";
    }
  } else if (tag === "ol" && Number.isInteger(attrs.start)) {
    node.start = attrs.start;
  } else if ((tag === "th" || tag === "td") && ALIGN.has(attrs.align)) {
    node.className = `align-${attrs.align}`;
  } else if (tag === "pre") {
    const code = document.createElement("code");
    code.append(...kids.filter((k) => typeof k === "string"));
    if (typeof attrs.lang === "string" && attrs.lang) {
      node.dataset.lang = attrs.lang;
      code.className = `language-${attrs.lang}`;
    }
    node.append(code);
    return node;
  }
  appendTree(node, kids, depth + 1);
  return node;
}

// Append the nodes of `tree` (strings and [tag, attrs, children]) to `parent`.
export function appendTree(parent, tree, depth = 0) {
  if (!Array.isArray(tree)) return;
  for (const node of tree) {
    if (typeof node === "string") {
      parent.append(node);
    } else if (Array.isArray(node) && depth < MAX_DEPTH && TAGS.has(node[0])) {
      parent.append(element(node[0], node[1] || {}, Array.isArray(node[2]) ? node[2] : [], depth));
    } else if (Array.isArray(node)) {
      parent.append(JSON.stringify(node)); // never markup: what it was, as text
    }
  }
}
