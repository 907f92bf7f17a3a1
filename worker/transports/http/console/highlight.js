// The words of a query marked where they appear in shown text (<mark> around text nodes'
// pieces): the text itself is unchanged, so an element's textContent stays the tool's.

const MAX_TERMS = 12;

// The terms of a query: its words without quotes or operators; a word of one Latin
// letter or digit marks nothing.
export function queryTerms(query) {
  const words = String(query).replace(/["'()*:^~+-]/g, " ").split(/\s+/)
    .filter((w) => w && !/^(AND|OR|NOT)$/.test(w) && !/^[\p{Script=Latin}\d]$/u.test(w));
  return [...new Set(words.map((w) => w.toLowerCase()))].slice(0, MAX_TERMS);
}

function pattern(terms) {
  const escaped = terms.sort((a, b) => b.length - a.length)
    .map((t) => t.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&"));
  return new RegExp(escaped.join("|"), "giu");
}

// Wrap every match of the query's terms in the text under `root`; returns the count.
export function markTerms(root, query) {
  const terms = queryTerms(query);
  if (!terms.length) return 0;
  const re = pattern(terms);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let count = 0;
  for (const node of nodes) {
    const text = node.data;
    re.lastIndex = 0;
    if (!re.test(text)) continue;
    re.lastIndex = 0;
    const parts = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(re)) {
      if (m.index > at) parts.append(text.slice(at, m.index));
      const mark = document.createElement("mark");
      mark.textContent = m[0];
      parts.append(mark);
      at = m.index + m[0].length;
      count++;
    }
    if (at < text.length) parts.append(text.slice(at));
    node.replaceWith(parts);
  }
  return count;
}
