// The WHATWG event-stream format, as pure functions: the live channel's parser and
// its reconnection rule, kept apart from fetch() so that they can be tested alone.

/** Split what has arrived into whole events and the unfinished rest. */
export function split(buffer) {
  const text = buffer.replace(/\r\n?/g, "\n");
  const blocks = text.split("\n\n");
  const rest = blocks.pop();
  return { blocks, rest };
}

/** One event block: {type, id, data} (data null when there is none or it is not JSON). */
export function parse(block) {
  let type = "message";
  let id = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (name === "event") type = value;
    else if (name === "data") data.push(value);
    else if (name === "id") id = value;
  }
  let parsed = null;
  if (data.length) {
    try {
      parsed = JSON.parse(data.join("\n"));
    } catch {
      parsed = null;
    }
  }
  return { type, id, data: parsed };
}

// Short waits: a person looks at the page while it says "Reconnecting", and the
// server should be back in view within seconds of its return (API.md, "The web app").
export const FIRST_DELAY_MS = 500;
export const LONGEST_DELAY_MS = 3000;

/** The wait before the next attempt, after a failed one that waited `previous` ms. */
export function nextDelay(previous) {
  return Math.min(Math.max(previous * 2, FIRST_DELAY_MS), LONGEST_DELAY_MS);
}

/** Where to resume: the id to send as Last-Event-ID after an event with `id`. */
export function resumeFrom(lastId, id) {
  // The channel sends entries in the order they were stored, which is not always the
  // order of their ids (those sort by creation time): its last id is where to resume.
  return id || lastId;
}
