// Settings' "when you are notified": the account's time zone, quiet hours and snooze
// (PATCH /api/account). The zone starts as the browser's (zone.js).
import { api } from "../api.js";
import { action, busy, clearErrors, field, fill, formError, h, showError } from "../dom.js";
import { moment } from "../format.js";
import { nextMorning } from "../times.js";
import { zoneAdopted } from "../zone.js";

const MODES = { hold: "Hold them until quiet hours end", silent: "Deliver them silently" };

/** The Quiet hours and Snooze sections of Settings. */
export async function quietSections(fail) {
  await zoneAdopted();
  let account = await api("GET", "/api/account");
  const saved = h("p", { class: "muted small", role: "status" });
  const snoozeState = h("p", { class: "small", role: "status" });
  const zones = new Set([...(Intl.supportedValuesOf?.("timeZone") || []), "UTC", account.timeZone]);
  const zone = field("Time zone", "timeZone", {}, "select");
  fill(zone.control, [...zones].sort().map((z) => h("option", { value: z }, z.replaceAll("_", " "))));
  const from = field("From", "quietFrom", { type: "time" });
  const to = field("To", "quietTo", { type: "time" });
  const mode = field("Mode", "quietMode", {}, "select");
  fill(mode.control, Object.entries(MODES).map(([value, words]) => h("option", { value }, words)));
  const save = h("button", { type: "submit" }, "Save");
  const form = h(
    "form",
    { class: "stack card", novalidate: true, "aria-label": "Quiet hours" },
    zone.wrap,
    h("p", { class: "muted small" }, "During quiet hours your devices stay quiet; the inbox still shows what arrives."),
    h("div", { class: "row times" }, from.wrap, to.wrap),
    mode.wrap,
    formError(),
    h("div", { class: "row" }, save, action("Turn off quiet hours", "secondary", () => change({ quietHours: null }), fail)),
    saved,
  );
  const show = () => {
    const quiet = account.quietHours;
    zone.control.value = account.timeZone;
    from.control.value = quiet?.start || "";
    to.control.value = quiet?.end || "";
    mode.control.value = quiet?.mode || "hold";
    saved.textContent = quiet
      ? `Quiet hours: ${quiet.start} to ${quiet.end} (${account.timeZone}); ${quiet.mode === "silent" ? "delivered silently" : "held until they end"}.`
      : `Quiet hours are off. Time zone: ${account.timeZone}.`;
    const until = account.snoozeUntil && new Date(account.snoozeUntil);
    snoozeState.textContent = until && until > new Date() ? `Snoozed until ${moment(until)}.` : "Not snoozed.";
  };
  async function change(patch) {
    account = await api("PATCH", "/api/account", patch);
    clearErrors(form);
    show();
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const patch = { timeZone: zone.control.value };
    const [start, end] = [from.control.value, to.control.value];
    if (start || end) {
      if (!start || !end || start === end) {
        const message = start === end ? "From and To must differ" : "Enter both times, or turn quiet hours off";
        showError(form, { message: "", details: [{ field: start ? "quietTo" : "quietFrom", message }] });
        return;
      }
      // Days and bypass set elsewhere (pushctl, the API) are kept.
      patch.quietHours = { ...(account.quietHours || {}), start, end, mode: mode.control.value };
    }
    await busy(save, async () => {
      try {
        await change(patch);
      } catch (error) {
        showError(form, error, { quietHours: "quietFrom" });
      }
    });
  });
  const snooze = (until) => () => change({ snoozeUntil: until && until().toISOString() });
  const snoozeGroup = h(
    "div",
    { class: "row", role: "group", "aria-label": "Snooze" },
    action("1 hour", "secondary", snooze(() => new Date(Date.now() + 3600 * 1000)), fail),
    action("Until tomorrow morning (08:00)", "secondary", snooze(() => nextMorning(new Date(), account.timeZone)), fail),
    action("Off", "secondary", snooze(null), fail),
  );
  show();
  return [
    h("h2", {}, "Quiet hours"),
    form,
    h("h2", {}, "Snooze"),
    h("div", { class: "card stack" }, h("p", { class: "muted small" }, "Hold every notification to your devices for a while."), snoozeState, snoozeGroup),
  ];
}
