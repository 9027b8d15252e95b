// The live channel: GET /api/inbox/events read with fetch() (EventSource cannot
// send the Authorization header, and the token must not go in a URL). It
// reconnects by itself with Last-Event-ID, so nothing is missed or repeated.
import { authFetch, isReachable } from "./api.js";

const listeners = new Set();
let lastId = null;
let controller = null;
let running = false;
// Each start() gets a new generation, so a loop left over from before a stop() ends.
let generation = 0;
let wake = null;
let state = "off";

/** Hear every event: {type: "notification"|"read"|"dismissed"|"state", data}. */
export function listen(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function tell(type, data) {
  for (const listener of listeners) listener({ type, data });
}

function setState(value) {
  if (state === value) return;
  state = value;
  tell("state", value);
}

export function liveState() {
  return state;
}

/** Note the newest entry already shown, so the channel resumes after it. */
export function seen(entryId) {
  if (entryId && (!lastId || entryId > lastId)) lastId = entryId;
}

/** Follow the channel until stop(). */
export function start() {
  if (running) return;
  running = true;
  generation += 1;
  loop(generation);
}

export function stop() {
  running = false;
  lastId = null;
  controller?.abort();
  if (wake) wake();
  setState("off");
}

/** Reconnect now (the network came back). */
export function reconnect() {
  if (wake) wake();
}

function pause(ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

async function loop(mine) {
  let delay = 1000;
  const current = () => running && mine === generation;
  while (current()) {
    controller = new AbortController();
    let ended = false;
    let opened = 0;
    try {
      const headers = { Accept: "text/event-stream" };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await authFetch("/api/inbox/events", { headers, signal: controller.signal });
      if (!response.ok) throw new Error(`live channel: ${response.status}`);
      setState("live");
      opened = Date.now();
      await read(response.body.getReader());
      ended = true;
    } catch {
      if (!current()) break;
    }
    if (!current()) break;
    // A channel that stayed open a while starts the backoff over. The server ends the
    // stream when the access token expires: then resume at once (one that ends as
    // soon as it began backs off, as after a failure).
    const lasted = opened > 0 && Date.now() - opened > 5000;
    if (lasted) delay = 1000;
    if (ended && lasted) {
      await pause(100);
      continue;
    }
    setState(isReachable() ? "reconnecting" : "offline");
    await pause(delay + Math.random() * 500);
    delay = Math.min(delay * 2, 30000);
  }
}

async function read(reader) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      dispatch(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  }
}

function dispatch(block) {
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
  // The channel sends entries in the order they were stored, which is not always the
  // order of their ids (those sort by creation time): its last id is where to resume.
  if (id) lastId = id;
  if (!data.length) return;
  let parsed;
  try {
    parsed = JSON.parse(data.join("\n"));
  } catch {
    return;
  }
  tell(type, parsed);
}
