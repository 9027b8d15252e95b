// A stream's send form: Title, Body, When (Now, or Later at a date and time) and Repeat
// (Never, Daily, Weekdays, Weekly, or a custom RRULE). Stream sends are immediate
// (API.md), so anything later or repeated is a stream schedule in this browser's zone:
// Later alone is a schedule of one occurrence (COUNT=1); Now with a repeat sends now
// and repeats from this minute on. The preset rules' next five times are worked out
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
  const when = h(
    "fieldset",
    { class: "stack" },
    h("legend", {}, "When"),
    h("div", { class: "row" }, choice(whenName, "now", "Now", true), choice(whenName, "later", "Later", false)),
    later,
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
  const isLater = () => form.querySelector(`input[name="${whenName}"]:checked`).value === "later";
  const start = () => {
    if (!isLater()) return new Date(Math.floor(Date.now() / 60000) * 60000);
    const at = date.control.value && time.control.value && new Date(`${date.control.value}T${time.control.value}`);
    return at && !Number.isNaN(at.getTime()) ? at : null;
  };
  const update = () => {
    const kind = repeat.control.value;
    later.hidden = !isLater();
    rule.wrap.hidden = kind !== "custom";
    button.textContent = isLater() || kind !== "never" ? "Schedule" : "Send";
    const from = start();
    if (kind === "never" || kind === "custom" || !from) {
      fill(preview, kind === "custom" ? h("p", { class: "muted" }, "The next five times are shown once the schedule is made.") : null);
      return;
    }
    fill(preview, nextTimes(repeatTimes(kind, from, 5, new Date())));
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
    if (!from) problems.push({ field: "date", message: "Pick a date and a time" });
    else if (isLater() && from <= new Date()) problems.push({ field: "date", message: "Pick a time ahead" });
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
        let times = null;
        if (isLater() || kind !== "never") {
          const rrule = kind === "never" ? "FREQ=DAILY;COUNT=1" : kind === "custom" ? rule.control.value.trim() : repeatRule(kind, from);
          const schedule = await api("POST", "/api/schedules", {
            name: content.title,
            rrule,
            start: localDateTime(from),
            timeZone: browserZone(),
            streamId: stream.id,
            template: content,
          });
          // The server's own preview, now that the schedule exists (a custom rule's too).
          const next = await api("GET", `/api/schedules/${schedule.id}/occurrences?limit=5`);
          if (kind !== "never") times = nextTimes(next.map((o) => new Date(o.at)));
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

function nextTimes(dates) {
  if (!dates.length) return h("p", { class: "muted" }, "No time ahead.");
  return h("ul", { class: "times-list", "aria-label": "Next five times" }, dates.map((d) => h("li", {}, h("time", { datetime: d.toISOString() }, moment(d)))));
}
