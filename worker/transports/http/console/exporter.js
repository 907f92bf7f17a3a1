// Export: the shown session (or it and its subagents) as Markdown from GET /v1/export,
// redacted as every view; shown in a dialog to read or copy, and saved as a file.

import { getText } from "./api.js";

const $ = (id) => document.getElementById(id);
let url = null;

async function exportSession(ctx, id, subtree) {
  const dialog = $("export-dialog");
  const out = $("export-output");
  out.textContent = "Exporting…";
  out.dataset.state = "running";
  if (!dialog.open) dialog.showModal();
  const query = `caller=${encodeURIComponent(ctx.callerId)}&session=${encodeURIComponent(id)}${subtree ? "&subtree=1" : ""}`;
  const { status, text } = await getText(`/v1/export?${query}`);
  if (status !== 200) {
    out.textContent = `HTTP ${status}: ${text}`;
    out.dataset.state = "error";
    return;
  }
  out.textContent = text;
  out.dataset.state = "ok";
  out.dataset.session = id;
  out.dataset.subtree = String(subtree);
  if (url) URL.revokeObjectURL(url);
  url = URL.createObjectURL(new Blob([text], { type: "text/markdown" }));
  const a = $("export-download");
  a.href = url;
  a.download = `${id.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80) || "session"}${subtree ? "-with-subagents" : ""}.md`;
}

export function wireExport(ctx, shownSession) {
  $("export-session").addEventListener("click", () => { const id = shownSession(); if (id) exportSession(ctx, id, false); });
  $("export-subtree").addEventListener("click", () => { const id = shownSession(); if (id) exportSession(ctx, id, true); });
  $("export-close").addEventListener("click", () => $("export-dialog").close());
  $("export-copy").addEventListener("click", async () => {
    try { await navigator.clipboard.writeText($("export-output").textContent); $("export-copy").textContent = "Copied"; } catch (_) { /* no clipboard */ }
  });
}
