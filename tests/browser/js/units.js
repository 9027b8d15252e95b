// Unit tests of the app's pure JavaScript, run in Chromium by tests/browser/test_js_units.py:
// the modules are imported from the server as the app imports them. Each test() is a
// pytest case of its own (collected by name).
const tests = [];
function test(name, body) {
  tests.push({ name, body });
}
function equal(actual, expected, what = "") {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what} expected ${e}, got ${a}`);
}

const format = await import("/app/js/format.js");
const sse = await import("/app/js/sse.js");
const state = await import("/app/js/state.js");
const times = await import("/app/js/times.js");

// A fixed local "now": 26 November 2026, 15:00 (the zone is the browser's).
const NOW = new Date(2026, 10, 26, 15, 0, 0);
const before = (ms) => new Date(NOW.getTime() - ms);
const MIN = 60 * 1000;
const HOUR = 60 * MIN;

test("ago: just now, minutes, hours, then the date", () => {
  equal(format.ago(before(10 * 1000), NOW), "just now");
  equal(format.ago(before(5 * MIN), NOW), "5 min ago");
  equal(format.ago(before(3 * HOUR), NOW), "3 h ago");
  equal(format.ago(before(30 * HOUR), NOW), before(30 * HOUR).toLocaleDateString());
});

test("ago: a time ahead reads 'in'", () => {
  equal(format.ago(new Date(NOW.getTime() + 10 * MIN), NOW), "in 10 min");
  equal(format.ago(new Date(NOW.getTime() + 3 * 24 * HOUR), NOW), "in 3 days");
});

test("dayLabel: today, yesterday, a weekday, then the date", () => {
  equal(format.dayLabel(new Date(2026, 10, 26, 0, 1), NOW), "Today");
  equal(format.dayLabel(new Date(2026, 10, 25, 23, 59), NOW), "Yesterday");
  const three = new Date(2026, 10, 23, 12);
  equal(format.dayLabel(three, NOW), three.toLocaleDateString(undefined, { weekday: "long" }));
  const old = new Date(2026, 9, 1, 12);
  equal(format.dayLabel(old, NOW), old.toLocaleDateString(undefined, { day: "numeric", month: "long" }));
  const lastYear = new Date(2025, 9, 1, 12);
  equal(
    format.dayLabel(lastYear, NOW),
    lastYear.toLocaleDateString(undefined, { day: "numeric", month: "long", year: "numeric" }),
  );
});

test("dayKey: the local calendar day", () => {
  equal(format.dayKey(new Date(2026, 0, 5, 23, 59)), "2026-01-05");
  equal(format.dayKey(new Date(2026, 0, 6, 0, 0)), "2026-01-06");
});

test("entryTime: relative today, the clock time before", () => {
  equal(format.entryTime(before(5 * MIN), NOW), "5 min ago");
  const yesterday = new Date(2026, 10, 25, 9, 30);
  equal(
    format.entryTime(yesterday, NOW),
    yesterday.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }),
  );
});

test("priorityLabel: words for high and critical only", () => {
  equal(["low", "normal", "high", "critical", undefined].map(format.priorityLabel), [
    null,
    null,
    "High priority",
    "Critical",
    null,
  ]);
});

test("sourceOf: the stream's name always, the sender's when it differs", () => {
  equal(format.sourceOf({ stream: { name: "CI" }, sender: { name: "CI" } }), "CI");
  equal(format.sourceOf({ stream: { name: "CI" }, sender: { name: "Jenkins" } }), "CI · Jenkins");
  equal(format.sourceOf({ stream: null, sender: { name: "Cron" } }), "Cron");
  equal(format.sourceOf({ stream: null, sender: null }), "Direct");
});

test("avatar: a name's initial and a stable shade", () => {
  const a = format.avatar("morning news");
  equal(a.letter, "M");
  equal(format.avatar("morning news"), a, "same name, same shade:");
  equal(format.avatar("").letter, "?");
  equal(format.avatar("émile").letter, "É");
  if (a.shade < 0 || a.shade > 5) throw new Error(`shade ${a.shade} out of 0..5`);
});

test("sse.split: whole events, the rest kept, CRLF as LF", () => {
  equal(sse.split("id: 1\ndata: {}\n\nid: 2\nda"), { blocks: ["id: 1\ndata: {}"], rest: "id: 2\nda" });
  equal(sse.split("a\r\n\r\nb"), { blocks: ["a"], rest: "b" });
  equal(sse.split(""), { blocks: [], rest: "" });
});

test("sse.parse: type, id and JSON data; comments ignored", () => {
  equal(sse.parse('id: inb_1\nevent: notification\ndata: {"a":1}'), {
    type: "notification",
    id: "inb_1",
    data: { a: 1 },
  });
  equal(sse.parse(": keepalive"), { type: "message", id: null, data: null });
  equal(sse.parse('data: {"a":\ndata: 2}'), { type: "message", id: null, data: { a: 2 } });
  equal(sse.parse("data: not json").data, null);
  equal(sse.parse("retry: 2000"), { type: "message", id: null, data: null });
});

test("sse.nextDelay: from 0.5 s, doubling, never past 3 s", () => {
  const seen = [];
  let delay = 0;
  for (let n = 0; n < 6; n += 1) {
    delay = sse.nextDelay(delay);
    seen.push(delay);
  }
  equal(seen, [500, 1000, 2000, 3000, 3000, 3000]);
});

test("sse.resumeFrom: the last id the channel sent, not the largest", () => {
  equal(sse.resumeFrom(null, "inb_2"), "inb_2");
  equal(sse.resumeFrom("inb_9", "inb_3"), "inb_3");
  equal(sse.resumeFrom("inb_9", null), "inb_9");
});

test("state: set tells watchers what changed, and only on a change", () => {
  const heard = [];
  const stop = state.watch((now, changed) => heard.push([...changed].sort()));
  const before = state.get().notice;
  state.set({ notice: "unit test" });
  state.set({ notice: "unit test" });
  state.set({ notice: before, live: state.get().live });
  stop();
  state.set({ notice: "after stop" });
  state.set({ notice: before });
  equal(heard, [["notice"], ["notice"]]);
});

test("state: a watcher that stops itself while others are told", () => {
  const heard = [];
  const first = state.watch(() => {
    heard.push("first");
    first();
  });
  const second = state.watch(() => heard.push("second"));
  const before = state.get().notice;
  state.set({ notice: "one" });
  state.set({ notice: before });
  second();
  equal(heard, ["first", "second", "second"]);
});

test("times.atWallTime: the service's daylight-saving rule", () => {
  const iso = (d) => d.toISOString();
  equal(iso(times.atWallTime(2026, 12, 24, 9, 0, "Europe/Berlin")), "2026-12-24T08:00:00.000Z");
  // 02:30 does not exist on 29 March 2026 in Berlin: shifted by the gap, to 03:30.
  equal(iso(times.atWallTime(2026, 3, 29, 2, 30, "Europe/Berlin")), "2026-03-29T01:30:00.000Z");
  // 02:30 exists twice on 25 October 2026: the first.
  equal(iso(times.atWallTime(2026, 10, 25, 2, 30, "Europe/Berlin")), "2026-10-25T00:30:00.000Z");
  equal(iso(times.atWallTime(2026, 6, 1, 8, 0, "Asia/Kolkata")), "2026-06-01T02:30:00.000Z");
});

test("times.nextMorning: the next 08:00 in the zone", () => {
  const zone = "America/New_York";
  equal(times.nextMorning(new Date("2026-11-27T02:00:00Z"), zone).toISOString(), "2026-11-27T13:00:00.000Z");
  equal(times.nextMorning(new Date("2026-11-27T13:00:00Z"), zone).toISOString(), "2026-11-28T13:00:00.000Z");
});

test("times.repeatTimes and repeatRule: daily, weekdays, weekly", () => {
  const friday = new Date(2026, 10, 27, 9, 30);
  const days = (list) => list.map((d) => `${d.getDate()} ${d.getHours()}:${d.getMinutes()}`);
  equal(days(times.repeatTimes("daily", friday, 3)), ["27 9:30", "28 9:30", "29 9:30"]);
  equal(days(times.repeatTimes("weekdays", friday, 3)), ["27 9:30", "30 9:30", "1 9:30"]);
  equal(days(times.repeatTimes("weekly", friday, 2)), ["27 9:30", "4 9:30"]);
  // None before now: the start itself has passed.
  equal(days(times.repeatTimes("daily", friday, 1, new Date(2026, 10, 27, 9, 31))), ["28 9:30"]);
  equal(times.repeatRule("weekly", friday), "FREQ=WEEKLY;BYDAY=FR");
  equal(times.repeatRule("weekdays", friday), "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR");
  equal(times.localDateTime(friday), "2026-11-27T09:30:00");
});

export async function run() {
  const results = [];
  for (const { name, body } of tests) {
    try {
      await body();
      results.push({ name, error: null });
    } catch (error) {
      results.push({ name, error: String(error && error.stack ? error.stack : error) });
    }
  }
  return results;
}
