// A stream's send form: Title, Body, When (Now, Later at a date and time, or Each
// recipient's local time) and Repeat (Never, Daily, Weekdays, Weekly, or a custom
// RRULE). Stream sends are immediate (API.md) but for a local-time send (`deliverAt`,
// which waits), so anything later or repeated is a stream schedule in this browser's
// zone (or, at each recipient's local time, `timeZone: "recipient"`): Later alone is
// a schedule of one occurrence (COUNT=1); Now with a repeat sends now and repeats from
// this minute on. The preset rules' next five times are worked out
// here before anything is made (the server previews only a schedule that exists); a
// custom rule's come from the server once its schedule is made.
import { api } from "../api.js";
import { busy, clearErrors, field, fill, formError, h, showError, uid } from "../dom.js";
import { publish } from "../publisher.js";
import { moment } from "../format.js";
import { localDateTime, repeatRule, repeatTimes } from "../times.js";
import { browserZone } from "../zone.js";
import { subscribers } from "./subscriptions.js";

const REPEATS = { never: "Never", daily: "Daily", weekdays: "Weekdays", weekly: "Weekly", custom: "Custom rule" };
const ALIASES = { "template.title": "title", "template.body": "body", start: "date" };

function choice(name, value, label, checked) {
  const id = uid(name);
  return h("label", { class: "check", for: id }, h("input", { type: "radio", id, name, value, checked }), label);
}

/** The send form of `stream`; `after()` runs once something was sent or scheduled. */
export function sendForm(stream, after) {
  const title = field("Title", "title", { type: "text", required: true, maxlength: 200 });
  const body = field("Body", "body", { rows: 3, maxlength: 2000 }, "textarea");
  const whenName = uid("when");
  const date = field("Date", "date", { type: "date" });
  const time = field("Time", "time", { type: "time" });
  const later = h("div", { class: "row times", hidden: true }, date.wrap, time.wrap);
  const localHint = h("p", { class: "muted small", hidden: true }, "At that time in each subscriber's own time zone; without a date, the next such time.");
  const when = h(
    "fieldset",
    { class: "stack" },
    h("legend", {}, "When"),
    h(
      "div",
      { class: "row" },
      choice(whenName, "now", "Now", true),
      choice(whenName, "later", "Later", false),
      choice(whenName, "local", "Each recipient's local time", false),
    ),
    later,
    localHint,
  );
  const repeat = field("Repeat", "repeat", {}, "select");
  fill(repeat.control, Object.entries(REPEATS).map(([value, words]) => h("option", { value }, words)));
  const rule = field("Rule (RRULE)", "rrule", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9" });
  rule.wrap.hidden = true;
  const preview = h("div", { class: "small", "aria-live": "polite" });
  const button = h("button", { type: "submit" }, "Send");
  const result = h("p", { class: "muted small", role: "status" });
  const form = h(
    "form",
    { class: "stack", novalidate: true, "aria-label": `Send to ${stream.name}` },
    title.wrap,
    body.wrap,
    when,
    repeat.wrap,
    rule.wrap,
    preview,
    formError(),
    h("div", { class: "row" }, button),
    result,
  );
  const mode = () => form.querySelector(`input[name="${whenName}"]:checked`).value;
  const isLater = () => mode() !== "now";
  const start = () => {
    if (!isLater()) return new Date(Math.floor(Date.now() / 60000) * 60000);
    // A local-time send without a date: the next such time, so today's date for a rule's start.
    const day = date.control.value || (mode() === "local" ? localDateTime(new Date()).slice(0, 10) : "");
    const at = day && time.control.value && new Date(`${day}T${time.control.value}`);
    return at && !Number.isNaN(at.getTime()) ? at : null;
  };
  const update = () => {
    const kind = repeat.control.value;
    later.hidden = !isLater();
    localHint.hidden = mode() !== "local";
    rule.wrap.hidden = kind !== "custom";
    button.textContent = isLater() || kind !== "never" ? "Schedule" : "Send";
    const from = start();
    if (kind === "never" || kind === "custom" || !from) {
      fill(preview, kind === "custom" ? h("p", { class: "muted" }, "The next five times are shown once the schedule is made.") : null);
      return;
    }
    fill(preview, nextTimes(repeatTimes(kind, from, 5, mode() === "local" ? from : new Date()), mode() === "local"));
  };
  form.addEventListener("change", update);
  form.addEventListener("input", (event) => event.target.type !== "text" && update());

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const content = { title: title.control.value.trim() };
    if (body.control.value.trim()) content.body = body.control.value.trim();
    const kind = repeat.control.value;
    const from = start();
    const problems = [];
    if (!content.title) problems.push({ field: "title", message: "Give the notification a title" });
    const local = mode() === "local";
    if (!from) problems.push(local ? { field: "time", message: "Pick a time" } : { field: "date", message: "Pick a date and a time" });
    else if (mode() === "later" && from <= new Date()) problems.push({ field: "date", message: "Pick a time ahead" });
    if (kind === "custom" && !rule.control.value.trim()) problems.push({ field: "rrule", message: "Enter a rule, like FREQ=WEEKLY;BYDAY=MO;BYHOUR=9" });
    if (problems.length) {
      showError(form, { message: "", details: problems });
      return;
    }
    await busy(button, async () => {
      try {
        const words = [];
        if (!isLater()) {
          const done = await publish("POST", `/api/streams/${stream.id}/send`, content);
          words.push(`Sent to ${subscribers(done.subscribers)} (${done.sent} ${done.sent === 1 ? "device" : "devices"}).`);
        }
        if (local && kind === "never") {
          const deliverAt = { localTime: time.control.value, ...(date.control.value ? { date: date.control.value } : {}) };
          const done = await publish("POST", `/api/streams/${stream.id}/send`, { ...content, deliverAt });
          words.push(`Each of ${subscribers(done.subscribers)} gets it at ${deliverAt.localTime} in their own time zone.`);
        }
        let times = null;
        if (mode() === "later" || kind !== "never") {
          const rrule = kind === "never" ? "FREQ=DAILY;COUNT=1" : kind === "custom" ? rule.control.value.trim() : repeatRule(kind, from);
          const schedule = await api("POST", "/api/schedules", {
            name: content.title,
            rrule,
            start: localDateTime(from),
            timeZone: local ? "recipient" : browserZone(),
            streamId: stream.id,
            template: content,
          });
          // The server's own preview, now that the schedule exists (a custom rule's too).
          const next = await api("GET", `/api/schedules/${schedule.id}/occurrences?limit=5`);
          // At each recipient's time, the wall-clock times (read here as this browser's).
          if (kind !== "never") times = nextTimes(next.map((o) => new Date(local ? o.localTime : o.at)), local);
          words.push(kind === "never" ? `Scheduled for ${moment(new Date(next[0]?.at || from))}.` : `Repeats ${REPEATS[kind].toLowerCase()}.`);
        }
        clearErrors(form);
        form.reset();
        update();
        result.textContent = words.join(" ");
        if (times) fill(preview, times);
        await after();
      } catch (error) {
        showError(form, error, ALIASES);
      }
    });
  });
  return form;
}

function nextTimes(dates, local = false) {
  if (!dates.length) return h("p", { class: "muted" }, "No time ahead.");
  const words = (d) => (local ? `${moment(d)}, each recipient's time` : moment(d));
  // A local-time send's times are wall-clock times in each zone: no instant, no offset.
  const stamp = (d) => (local ? localDateTime(d).slice(0, 16) : d.toISOString());
  return h("ul", { class: "times-list", "aria-label": "Next five times" }, dates.map((d) => h("li", {}, h("time", { datetime: stamp(d) }, words(d)))));
}
