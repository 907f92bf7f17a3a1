// Times as people read them: local and relative ("3 hours ago"), the exact local time and
// the UTC instant on hover.

const UNITS = [["year", 31536e6], ["month", 2592e6], ["week", 6048e5], ["day", 864e5],
  ["hour", 36e5], ["minute", 6e4]];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function localTime(ms) {
  if (typeof ms !== "number") return "—";
  const d = new Date(ms);
  const two = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

export function ago(ms, now = Date.now()) {
  if (typeof ms !== "number") return "";
  const delta = ms - now;
  for (const [unit, size] of UNITS) {
    if (Math.abs(delta) >= size) return relative.format(Math.round(delta / size), unit);
  }
  return relative.format(0, "minute");
}

// A <time> element: relative text, local and ISO on hover.
export function timeElement(ms) {
  const t = document.createElement("time");
  if (typeof ms !== "number") { t.textContent = "—"; return t; }
  t.dateTime = new Date(ms).toISOString();
  t.textContent = ago(ms);
  t.title = `${localTime(ms)} (${t.dateTime})`;
  return t;
}
