// The live channel: GET /api/inbox/events read with fetch() (EventSource cannot
// send the Authorization header, and the token must not go in a URL). It
// reconnects by itself with Last-Event-ID, so nothing is missed or repeated.
import { authFetch, isReachable } from "./api.js";
import { nextDelay, parse, resumeFrom, split } from "./sse.js";
import * as state from "./state.js";

// The server sends at least a keepalive every 15 s: a channel silent for longer has
// lost the server without a word (a network that dropped, a machine that froze).
const SILENCE_MS = 20000;
const listeners = new Set();
let lastId = null;
let controller = null;
let running = false;
// Each start() gets a new generation, so a loop left over from before a stop() ends.
let generation = 0;
let wake = null;

/** Hear every event: {type: "notification"|"read"|"dismissed"|"withdrawn"|"opened", data}. */
export function listen(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function tell(type, data) {
  for (const listener of listeners) listener({ type, data });
}

function setState(value) {
  state.set({ live: value });
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
  let delay = 0;
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
      // Without a resume point the channel carries only what comes from now on: the
      // inbox reads its first page again for what arrived before it opened.
      tell("opened", { resumed: Boolean(headers["Last-Event-ID"]) });
      opened = Date.now();
      await read(response.body.getReader(), controller);
      ended = true;
    } catch {
      if (!current()) break;
    }
    if (!current()) break;
    // The server ends the stream when the access token expires: then resume at once
    // (one that ends as soon as it began backs off, as after a failure).
    const lasted = opened > 0 && Date.now() - opened > 5000;
    if (lasted) delay = 0;
    if (ended && lasted) {
      await pause(100);
      continue;
    }
    setState(isReachable() ? "reconnecting" : "offline");
    delay = nextDelay(delay);
    await pause(delay + Math.random() * 500);
  }
}

async function read(reader, mine) {
  const decoder = new TextDecoder();
  let buffer = "";
  let watchdog = null;
  const quiet = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => mine.abort(), SILENCE_MS);
  };
  quiet();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      quiet();
      const { blocks, rest } = split(buffer + decoder.decode(value, { stream: true }));
      buffer = rest;
      for (const block of blocks) {
        const event = parse(block);
        lastId = resumeFrom(lastId, event.id);
        if (event.data !== null) tell(event.type, event.data);
      }
    }
  } finally {
    clearTimeout(watchdog);
  }
}

// The browser knows it lost the network before the channel does: say so at once,
// and try again as soon as it is back.
window.addEventListener("offline", () => {
  if (running) controller?.abort();
});
window.addEventListener("online", reconnect);
