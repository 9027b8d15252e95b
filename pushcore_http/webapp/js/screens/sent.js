// A stream's Sent list: each send with its delivered and opened counts, Edit while no
// device has it yet (PATCH, refused with 409 not_editable after), Withdraw once sent.
// Read with the app's own key (notifications are read and changed with keys only).
import { action, alertLine, busy, clearErrors, field, fill, formError, h, showError, uid, when } from "../dom.js";
import { publish } from "../publisher.js";

const PAGE = 10;
const STATUS = {
  SCHEDULED: "Waiting for a device",
  QUEUED: "Going out",
  DELIVERED: "Delivered",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
};
const REASONS = { no_devices: "no subscriber device", superseded: "replaced", muted: "muted", expired: "expired" };
const NOT_EDITABLE =
  "It has already gone out (or was cancelled), so it can no longer be edited. Withdraw it, or send a correction.";

/** The Sent disclosure of a stream's card; `refresh()` reloads it when open. */
export function sentList(stream) {
  const list = h("ul", { class: "list sent", "aria-label": `Sent to ${stream.name}` });
  const { line: problem, fail, clear } = alertLine();
  const load = async () => {
    clear();
    try {
      const query = `/api/notifications?streamId=${encodeURIComponent(stream.id)}&limit=${PAGE}`;
      const { items } = await publish("GET", query);
      // A list's items leave the counts out: each send's detail has them.
      const details = await Promise.all(items.map((n) => publish("GET", `/api/notifications/${n.id}`)));
      fill(list, details.length ? details.map((n) => item(n, load, fail)) : h("li", { class: "muted small" }, "Nothing sent yet."));
    } catch (error) {
      fail(error);
    }
  };
  const box = h(
    "details",
    { class: "fold" },
    h("summary", {}, "Sent"),
    h("div", { class: "stack" }, problem, list, h("div", { class: "row" }, action("Refresh", "secondary", load, fail))),
  );
  box.addEventListener("toggle", () => box.open && load());
  box.refresh = () => (box.open ? load() : null);
  return box;
}

function counts(n) {
  const d = n.deliveries || {};
  const parts = [`${d.delivered || 0} delivered`, `${d.opened || 0} opened`];
  if (d.held) parts.push(`${d.held} held by quiet hours`);
  return parts.join(" · ");
}

function item(n, reload, fail) {
  const reason = n.failureReason ? ` (${REASONS[n.failureReason] || n.failureReason})` : "";
  const status = n.withdrawnAt ? "Withdrawn" : STATUS[n.status] + reason;
  const open = n.status === "QUEUED" || n.status === "SCHEDULED";
  const body = h("div", { class: "stack" });
  const actions = h("div", { class: "row" });
  if (!n.withdrawnAt && open && !n.deliveries?.delivered) {
    actions.append(action("Edit", "secondary", () => fill(body, editForm(n, reload)), fail));
  }
  // Once some device or inbox has it: a send that reached nobody has nothing to take back.
  if (!n.withdrawnAt && (n.status === "DELIVERED" || n.deliveries?.delivered)) {
    const withdraw = async () => {
      if (!window.confirm(`Withdraw "${n.title}" from every device and inbox?`)) return;
      await publish("POST", `/api/notifications/${n.id}/withdraw`);
      await reload();
    };
    actions.append(action("Withdraw", "danger", withdraw, fail));
  }
  return h(
    "li",
    { class: "sent-item" },
    h("h3", {}, n.title),
    n.body ? h("p", { class: "small" }, n.body) : null,
    h("p", { class: "muted small" }, `${status} · `, when(n.scheduledAt), ` · ${counts(n)}`),
    body,
    actions.childElementCount ? actions : null,
  );
}

function editForm(n, reload) {
  const title = field("New title", "title", { type: "text", required: true, maxlength: 200, value: n.title });
  const text = field("New body", "body", { rows: 2, maxlength: 2000 }, "textarea");
  text.control.value = n.body || "";
  const save = h("button", { type: "submit" }, "Save");
  const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
  cancel.addEventListener("click", reload);
  const form = h("form", { class: "stack", novalidate: true, id: uid("edit"), "aria-label": `Edit ${n.title}` }, title.wrap, text.wrap, formError(), h("div", { class: "row" }, save, cancel));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const patch = { title: title.control.value.trim(), body: text.control.value.trim() };
    await busy(save, async () => {
      try {
        // Only over the revision shown: a change made meanwhile is a 412, not lost.
        await publish("PATCH", `/api/notifications/${n.id}`, patch, { "If-Match": String(n.revision) });
        clearErrors(form);
        await reload();
      } catch (error) {
        if (error.code === "not_editable") error.message = NOT_EDITABLE;
        if (error.code === "revision_mismatch") error.message = "It was changed meanwhile. Cancel to see the new version.";
        showError(form, error);
      }
    });
  });
  setTimeout(() => title.control.focus());
  return form;
}
