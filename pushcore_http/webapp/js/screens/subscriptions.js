// Subscriptions: Stream code + Subscribe, each with Unsubscribe; and the share link's screen.
import { api } from "../api.js";
import { action, busy, clearErrors, field, fill, formError, h, menu, showError } from "../dom.js";
import { avatar, moment } from "../format.js";

const HOUR_MS = 3600 * 1000;
const MUTES = [["1 hour", HOUR_MS], ["8 hours", 8 * HOUR_MS], ["1 week", 168 * HOUR_MS], ["Off", null]];

const CODE_ALIASES = { code: "code", not_found: "code", own_stream: "code", already_subscribed: "code" };

export async function render(root, context, params) {
  if (params.code) return share(root, context, params.code);
  const code = field("Stream code", "code", {
    type: "text",
    autocapitalize: "none",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "falcon-7k2q",
    required: true,
  });
  const button = h("button", { type: "submit" }, "Subscribe");
  const form = h("form", { class: "stack card", novalidate: true }, code.wrap, formError(), h("div", { class: "row" }, button));
  const list = h("ul", { class: "list", "aria-label": "Your subscriptions" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });

  const load = async () => {
    try {
      const subscriptions = await api("GET", "/api/streams/subscriptions");
      fill(list, subscriptions.length ? subscriptions.map((s) => item(s, load, problem)) : h("li", { class: "muted" }, "You follow no stream yet."));
    } catch (error) {
      problem.textContent = error.message;
      problem.hidden = false;
    }
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = code.control.value.trim().toLowerCase();
    if (!value) {
      showError(form, { message: "", details: [{ field: "code", message: "Enter the stream's code, like falcon-7k2q" }] });
      return;
    }
    await busy(button, async () => {
      try {
        await api("POST", "/api/streams/subscribe", { code: value });
        clearErrors(form);
        code.control.value = "";
        await load();
      } catch (error) {
        if (error.code === "not_found") error.message = "No stream has this code. Check it and try again.";
        showError(form, error, CODE_ALIASES);
      }
    });
  });

  fill(root, h("h1", {}, "Subscriptions"), form, problem, h("h2", {}, "Streams you follow"), list);
  await load();
}

function item(subscription, reload, problem) {
  const { stream } = subscription;
  const fail = (error) => {
    problem.textContent = error.message;
    problem.hidden = false;
  };
  const button = action(
    "Unsubscribe",
    "danger",
    async () => {
      await api("DELETE", `/api/streams/subscriptions/${subscription.id}`);
      await reload();
    },
    fail,
  );
  // Until then its sends reach the inbox but no device (API.md, "The recipient's time").
  const mute = menu(
    `Mute ${stream.name}`,
    MUTES.map(([words, ms]) => [
      words,
      () =>
        api("PATCH", `/api/streams/subscriptions/${subscription.id}`, {
          mutedUntil: ms && new Date(Date.now() + ms).toISOString(),
        })
          .then(reload)
          .catch(fail),
    ]),
    "Mute",
  );
  const until = subscription.mutedUntil && new Date(subscription.mutedUntil);
  const muted = until && until > new Date() ? h("p", { class: "small muted-until" }, `Muted until ${moment(until)}`) : null;
  return h(
    "li",
    { class: "card follow" },
    streamIcon(stream),
    h(
      "div",
      { class: "follow-text" },
      h("h3", {}, stream.name),
      stream.description ? h("p", { class: "small" }, stream.description) : null,
      h("p", { class: "muted small" }, h("code", {}, stream.code), ` · ${subscribers(stream.subscribers)}`),
      muted,
    ),
    h("div", { class: "row follow-actions" }, mute, button),
  );
}

/** A stream's icon, or its initial on a colour of its own. */
export function streamIcon(stream) {
  if (stream.iconUrl) {
    return h("img", { class: "icon", src: stream.iconUrl, alt: "", width: 40, height: 40, referrerpolicy: "no-referrer" });
  }
  const { letter, shade } = avatar(stream.name);
  return h("span", { class: `icon avatar shade-${shade}`, "aria-hidden": "true" }, letter);
}

export function subscribers(count) {
  return count === 1 ? "1 subscriber" : `${count} subscribers`;
}

async function share(root, context, code) {
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  let stream;
  try {
    stream = await api("GET", `/api/streams/lookup/${encodeURIComponent(code)}`);
  } catch (error) {
    const text = error.code === "not_found" ? `No stream has the code ${code}.` : error.message;
    fill(root, h("h1", {}, "Subscribe"), h("p", { class: "error", role: "alert" }, text), h("p", {}, h("a", { href: "/app/subscriptions" }, "Your subscriptions")));
    return;
  }
  const done = h("p", { role: "status" }, "You follow this stream. ", h("a", { href: "/app/subscriptions" }, "Your subscriptions"));
  const button = action(
    "Subscribe",
    null,
    async (self) => {
      await api("POST", "/api/streams/subscribe", { code });
      self.replaceWith(done);
    },
    (error) => {
      problem.textContent = error.message;
      problem.hidden = false;
    },
  );
  fill(
    root,
    h("h1", {}, stream.name),
    h(
      "div",
      { class: "card stack" },
      stream.iconUrl ? h("img", { src: stream.iconUrl, alt: "", width: 48, height: 48, referrerpolicy: "no-referrer" }) : null,
      stream.description ? h("p", {}, stream.description) : null,
      h("p", { class: "muted small" }, h("code", {}, stream.code), ` · ${subscribers(stream.subscribers)}`),
      problem,
      stream.isSubscribed ? done : h("div", { class: "row" }, button),
    ),
  );
}
