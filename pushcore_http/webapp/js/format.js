// How times, priorities and sources read on screen: pure functions of their inputs
// (the clock is a parameter), tested on their own.

const DAY_MS = 24 * 3600 * 1000;

/** "just now", "5 min ago", "3 h ago", then the date; "in 2 h" ahead. */
export function ago(date, now = new Date()) {
  const seconds = Math.round((now.getTime() - date.getTime()) / 1000);
  if (seconds < -45) return `in ${ahead(-seconds)}`;
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return date.toLocaleDateString();
}

function ahead(seconds) {
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.round(hours / 24)} days`;
}

function midnight(date) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate());
}

/** The local calendar day of `date`, as a key ("2026-11-26"). */
export function dayKey(date) {
  const m = String(date.getMonth() + 1).padStart(2, "0");
  const d = String(date.getDate()).padStart(2, "0");
  return `${date.getFullYear()}-${m}-${d}`;
}

/** A day's heading: "Today", "Yesterday", a weekday within the week, else the date. */
export function dayLabel(date, now = new Date()) {
  const days = Math.round((midnight(now) - midnight(date)) / DAY_MS);
  if (days === 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days > 1 && days < 7) return date.toLocaleDateString(undefined, { weekday: "long" });
  const sameYear = date.getFullYear() === now.getFullYear();
  return date.toLocaleDateString(undefined, {
    day: "numeric",
    month: "long",
    ...(sameYear ? {} : { year: "numeric" }),
  });
}

/** An entry's time: relative today ("5 min ago"), the clock time on earlier days. */
export function entryTime(date, now = new Date()) {
  if (dayKey(date) === dayKey(now)) return ago(date, now);
  return date.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

/** The words a priority is marked with (API.md): none for low and normal. */
export function priorityLabel(priority) {
  if (priority === "critical") return "Critical";
  if (priority === "high") return "High priority";
  return null;
}

/** Who an entry is from: the stream's name always (API.md), the sender's beside it. */
export function sourceOf(entry) {
  const names = [entry.stream?.name, entry.sender?.name].filter(Boolean);
  return [...new Set(names)].join(" · ") || "Direct";
}

/** The letter and colour (one of `shades`) of a name's stand-in icon. */
export function avatar(name, shades = 6) {
  const text = String(name || "?").trim();
  let hash = 0;
  for (const ch of text) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
  return { letter: ([...text][0] || "?").toUpperCase(), shade: hash % shades };
}

/** A moment a person reads: "Fri 08:00" (with the date when over a week away). */
export function moment(date, now = new Date()) {
  const far = Math.abs(date - now) > 6 * DAY_MS;
  return date.toLocaleString(undefined, {
    weekday: "short", hour: "2-digit", minute: "2-digit", ...(far ? { day: "numeric", month: "short" } : {}),
  });
}
