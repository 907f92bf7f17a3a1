// The console's two DOM builders: an element with a class and text, and a link to a
// session's conversation. Text is always set as text, never parsed as markup.

import { sessionHref } from "./links.js";

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A link to the conversation of `id` (its text: `text`, else the id).
export function sessionLink(id, text, className = "") {
  const a = el("a", className, text || id);
  a.href = sessionHref(id);
  a.dataset.session = id;
  return a;
}
