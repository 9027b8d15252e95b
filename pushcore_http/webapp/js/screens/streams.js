// Streams: New stream (Name, Description, Icon URL); each with code, subscribers,
// share link and QR code, a send form (screens/send.js), what was Sent, its Schedules,
// and Delete.
import { api } from "../api.js";
import { action, busy, clearErrors, field, fill, formError, h, showError, uid } from "../dom.js";
import { publish } from "../publisher.js";
import { subscribers } from "./subscriptions.js";

// The send form, Sent and Schedules: loaded with this screen, not with the app's first
// page (the inbox). {sendForm, sentList, scheduleList} once loaded.
let parts = null;

export async function render(root) {
  if (!parts) {
    const modules = await Promise.all([import("./send.js"), import("./sent.js"), import("./schedules.js")]);
    parts = Object.assign({}, ...modules);
  }
  const list = h("div", { "aria-label": "Your streams" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const create = createForm(async () => {
    create.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
    await load();
  });
  const toggle = h("button", { type: "button", "aria-expanded": "false", "aria-controls": create.id }, "New stream");
  toggle.addEventListener("click", () => {
    const open = create.hidden;
    create.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) create.querySelector("input").focus();
  });

  async function load() {
    try {
      const streams = await api("GET", "/api/streams");
      const made = streams.map((s) => card(s, load, problem));
      fill(list, made.length ? made : h("p", { class: "muted" }, "You publish no stream yet."));
    } catch (error) {
      problem.textContent = error.message;
      problem.hidden = false;
    }
  }
  fill(root, h("h1", {}, "Streams"), toggle, create, problem, list);
  await load();
}

function createForm(created) {
  const name = field("Name", "name", { type: "text", required: true, maxlength: 100 });
  const description = field("Description", "description", { type: "text" });
  const icon = field("Icon URL", "iconUrl", { type: "url", placeholder: "https://…/icon.png" });
  const button = h("button", { type: "submit" }, "Create stream");
  const form = h(
    "form",
    { id: uid("new-stream"), class: "stack card", novalidate: true, hidden: true, "aria-label": "New stream" },
    name.wrap,
    description.wrap,
    icon.wrap,
    formError(),
    h("div", { class: "row" }, button),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { name: name.control.value.trim() };
    if (description.control.value.trim()) body.description = description.control.value.trim();
    if (icon.control.value.trim()) body.iconUrl = icon.control.value.trim();
    await busy(button, async () => {
      try {
        await publish("POST", "/api/streams", body);
        clearErrors(form);
        form.reset();
        await created();
      } catch (error) {
        showError(form, error, { plan_limit: "name" });
      }
    });
  });
  return form;
}

function card(stream, reload, problem) {
  // PUSHCORE_PUBLIC_URL when the server has one (as the QR code), else this page's origin.
  const base = document.querySelector('meta[name="pushcore-share-base"]')?.content || location.origin;
  const link = `${base}/app/subscribe/${stream.code}`;
  const copy = h("button", { type: "button", class: "secondary" }, "Copy link");
  copy.addEventListener("click", async () => {
    await navigator.clipboard?.writeText(link).catch(() => {});
    copy.textContent = "Copied";
    setTimeout(() => {
      copy.textContent = "Copy link";
    }, 2000);
  });
  const remove = action(
    "Delete",
    "danger",
    async () => {
      if (!window.confirm(`Delete the stream ${stream.name}? Its subscribers stop receiving it.`)) return;
      await api("DELETE", `/api/streams/${stream.id}`);
      await reload();
    },
    (error) => {
      problem.textContent = error.message;
      problem.hidden = false;
    },
  );
  const headingId = uid("stream");
  const sent = parts.sentList(stream);
  const schedules = parts.scheduleList(stream);
  return h(
    "section",
    { class: "card stack", "aria-labelledby": headingId, dataset: { code: stream.code } },
    h("h2", { id: headingId }, stream.name),
    stream.description ? h("p", {}, stream.description) : null,
    h("p", { class: "small" }, "Code ", h("code", {}, stream.code), ` · ${subscribers(stream.subscribers)}`),
    h("p", { class: "small" }, "Share link: ", h("a", { href: link }, link)),
    h("div", { class: "row" }, copy),
    h("img", { class: "qr", src: `/app/qr/${stream.code}.svg`, alt: `QR code of the share link of ${stream.name}`, width: 164, height: 164 }),
    parts.sendForm(stream, () => Promise.all([sent.refresh(), schedules.refresh()])),
    sent,
    schedules,
    h("div", { class: "row" }, remove),
  );
}
