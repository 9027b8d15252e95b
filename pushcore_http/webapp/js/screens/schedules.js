// A stream's Schedules: what it sends later or again (POST /api/schedules with its
// streamId), each with Pause, Resume and Delete.
import { api } from "../api.js";
import { action, alertLine, fill, h } from "../dom.js";
import { moment } from "../format.js";

const RULES = {
  "FREQ=DAILY;COUNT=1": "Once",
  "FREQ=DAILY": "Daily",
  "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR": "Weekdays",
};
const DAYS = { MO: "Mondays", TU: "Tuesdays", WE: "Wednesdays", TH: "Thursdays", FR: "Fridays", SA: "Saturdays", SU: "Sundays" };

/** How a rule reads: the app's own in words, any other as written. */
function ruleWords(rrule) {
  const weekly = rrule.match(/^FREQ=WEEKLY;BYDAY=([A-Z]{2})$/);
  return RULES[rrule] || (weekly && `Weekly, ${DAYS[weekly[1]]}`) || rrule;
}

/** The Schedules disclosure of a stream's card; `refresh()` reloads it when open. */
export function scheduleList(stream) {
  const list = h("ul", { class: "list", "aria-label": `Schedules of ${stream.name}` });
  const { line: problem, fail, clear } = alertLine();
  const load = async () => {
    clear();
    try {
      const { items } = await api("GET", "/api/schedules?limit=100");
      const mine = items.filter((s) => s.streamId === stream.id);
      fill(list, mine.length ? mine.map((s) => item(s, load, fail)) : h("li", { class: "muted small" }, "Nothing scheduled."));
    } catch (error) {
      fail(error);
    }
  };
  const box = h("details", { class: "fold" }, h("summary", {}, "Schedules"), h("div", { class: "stack" }, problem, list));
  box.addEventListener("toggle", () => box.open && load());
  box.refresh = () => (box.open ? load() : null);
  return box;
}

function item(schedule, reload, fail) {
  const run = (verb) => async () => {
    await api("POST", `/api/schedules/${schedule.id}/${verb}`);
    await reload();
  };
  const remove = async () => {
    if (!window.confirm(`Delete the schedule ${schedule.name}? Nothing more is sent by it.`)) return;
    await api("DELETE", `/api/schedules/${schedule.id}`);
    await reload();
  };
  const next = schedule.nextOccurrenceAt && new Date(schedule.nextOccurrenceAt);
  const state = {
    ACTIVE: next ? `Next ${moment(next)}` : "Active",
    PAUSED: "Paused",
    COMPLETED: "Completed",
  }[schedule.state];
  return h(
    "li",
    { class: "schedule" },
    h("h3", {}, schedule.name),
    h("p", { class: "muted small" }, `${ruleWords(schedule.rrule)} · ${state} · ${schedule.sent} sent · ${schedule.timeZone}`),
    h(
      "div",
      { class: "row" },
      schedule.state === "ACTIVE" ? action("Pause", "secondary", run("pause"), fail) : null,
      schedule.state === "PAUSED" ? action("Resume", "secondary", run("resume"), fail) : null,
      action("Delete", "danger", remove, fail),
    ),
  );
}
