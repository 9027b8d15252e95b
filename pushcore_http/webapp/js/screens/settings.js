// Settings: who is signed in and Sign out first; quiet hours and snooze; API keys
// (create, shown once, revoke), this browser's devices, password.
import { api, changePassword, currentAccount } from "../api.js";
import { action, busy, clearErrors, field, fill, formError, h, showError, uid, when } from "../dom.js";
import { currentEndpoint, enablePush, isLiveToken, pushUnavailable } from "../device.js";
import { NAME as APP_KEY } from "../publisher.js";

// Each scope in words, beside its name (the name is the checkbox's label).
const SCOPES = {
  "notifications:read": "Read your inbox and the notifications you sent.",
  "notifications:write": "Send notifications, publish to your streams, mark your inbox read.",
  "devices:read": "See the devices that receive your notifications.",
  "devices:write": "Add and remove devices.",
  "webhooks:read": "See your event webhook endpoints and what was sent to them.",
  "webhooks:write": "Add, change and remove event webhook endpoints.",
};

export async function render(root, context) {
  const keys = h("ul", { class: "list", "aria-label": "API keys" });
  const devices = h("ul", { class: "list", "aria-label": "Devices" });
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const fail = (error) => {
    problem.textContent = error.message;
    problem.hidden = false;
  };
  const loadKeys = async () => {
    try {
      // The app's own publishing keys are the app's business, not the person's.
      const all = (await api("GET", "/api/keys")).filter((k) => k.name !== APP_KEY);
      const gone = all.filter((k) => !usable(k));
      const active = all.filter(usable);
      fill(
        keys,
        active.length ? active.map((k) => keyItem(k, loadKeys, fail)) : h("li", { class: "muted" }, "No API key yet."),
        gone.length
          ? h(
              "li",
              {},
              h(
                "details",
                { class: "gone" },
                h("summary", {}, `Revoked and expired keys (${gone.length})`),
                h("ul", { class: "list" }, gone.map((k) => keyItem(k, loadKeys, fail))),
              ),
            )
          : null,
      );
    } catch (error) {
      fail(error);
    }
  };
  const loadDevices = async () => {
    try {
      const [all, endpoint] = await Promise.all([api("GET", "/api/devices"), currentEndpoint().catch(() => null)]);
      fill(devices, all.length ? all.map((d) => deviceItem(d, endpoint, loadDevices, fail)) : h("li", { class: "muted" }, "No device."));
    } catch (error) {
      fail(error);
    }
  };
  const quiet = h("div", {});
  const loadQuiet = async () => {
    try {
      // Loaded with this screen, not with the app's first page.
      const { quietSections } = await import("./quiet.js");
      fill(quiet, await quietSections(fail));
    } catch (error) {
      fail(error);
    }
  };
  const signOut = h("button", { type: "button", class: "danger" }, "Sign out");
  signOut.addEventListener("click", () => busy(signOut, () => context.signOut()));
  fill(
    root,
    h("h1", {}, "Settings"),
    h(
      "section",
      { class: "card account", "aria-label": "Signed in" },
      h("p", {}, "Signed in as ", h("strong", {}, currentAccount()?.id || "")),
      signOut,
    ),
    problem,
    quiet,
    h("h2", {}, "API keys"),
    keyForm(loadKeys),
    keys,
    h("h2", {}, "Devices"),
    pushControl(loadDevices),
    devices,
    h("h2", {}, "Password"),
    passwordForm(),
  );
  await Promise.all([loadQuiet(), loadKeys(), loadDevices()]);
}

function keyForm(created) {
  const name = field("Name", "name", { type: "text", required: true, maxlength: 100 });
  const legendId = uid("scopes");
  const boxes = Object.entries(SCOPES).map(([scope, words]) => {
    const id = uid("scope");
    const about = `${id}-about`;
    return h(
      "div",
      { class: "scope" },
      h(
        "label",
        { class: "check", for: id },
        h("input", { type: "checkbox", id, name: "scopes", value: scope, "aria-describedby": about }),
        h("code", {}, scope),
      ),
      h("p", { id: about, class: "muted small" }, words),
    );
  });
  const scopes = h(
    "fieldset",
    { class: "stack", "aria-describedby": `${legendId}-error` },
    h("legend", { id: legendId }, "Scopes"),
    boxes,
    h("p", { id: `${legendId}-error`, class: "error", hidden: true }),
  );
  const expires = field("Expires", "expiresAt", { type: "datetime-local" });
  const button = h("button", { type: "submit" }, "Create key");
  const shown = h("div", { class: "stack", "aria-live": "polite" });
  const form = h("form", { class: "stack card", novalidate: true }, name.wrap, scopes, expires.wrap, formError(), h("div", { class: "row" }, button), shown);
  // The scopes' error goes beside the group: showError finds it through a control named "scopes".
  scopes.setAttribute("name", "scopes");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = [...form.querySelectorAll('input[name="scopes"]:checked')].map((box) => box.value);
    const body = { name: name.control.value.trim(), scopes: chosen };
    if (expires.control.value) body.expiresAt = new Date(expires.control.value).toISOString();
    const missing = [];
    if (!body.name) missing.push({ field: "name", message: "Give the key a name" });
    if (!chosen.length) missing.push({ field: "scopes", message: "Choose at least one scope" });
    if (missing.length) {
      showError(form, { message: "", details: missing }, { scopes: "scopes" });
      return;
    }
    await busy(button, async () => {
      try {
        const key = await api("POST", "/api/keys", body);
        clearErrors(form);
        form.reset();
        fill(shown, newKey(key));
        await created();
      } catch (error) {
        showError(form, error);
      }
    });
  });
  return form;
}

function newKey(key) {
  const value = h("p", { class: "key", tabindex: "0" }, key.key);
  const copy = h("button", { type: "button", class: "secondary" }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(key.key);
      copy.textContent = "Copied";
    } catch {
      // No clipboard here (an insecure origin, a refusal): select the text for Ctrl+C.
      getSelection().selectAllChildren(value);
    }
  });
  return h(
    "div",
    { class: "stack" },
    h("p", {}, h("strong", {}, `Your new key ${key.name}. `), "Copy it now: it is shown only once."),
    value,
    h("div", { class: "row" }, copy),
  );
}

function usable(key) {
  return key.isActive && !(key.expiresAt && new Date(key.expiresAt) < new Date());
}

function keyItem(key, reload, fail) {
  const revoke = action(
    "Revoke",
    "danger",
    async () => {
      await api("DELETE", `/api/keys/${key.id}`);
      await reload();
    },
    fail,
  );
  const state = !key.isActive ? "revoked" : !usable(key) ? "expired" : null;
  return h(
    "li",
    { class: "card stack" },
    h("h3", {}, key.name, state ? h("span", { class: "muted" }, ` (${state})`) : null),
    h("p", { class: "small" }, h("code", {}, `${key.keyPrefix}…`), ` · ${key.scopes.join(", ")}`),
    h("p", { class: "muted small" }, "Last used ", when(key.lastUsedAt), key.expiresAt ? [" · expires ", when(key.expiresAt)] : null),
    usable(key) ? h("div", { class: "row" }, revoke) : null,
  );
}

function pushControl(changed) {
  const why = pushUnavailable();
  if (why) return h("p", { class: "notice-line" }, why);
  const button = h("button", { type: "button" }, "Enable notifications");
  const message = h("p", { class: "error", role: "alert", hidden: true });
  button.addEventListener("click", () =>
    busy(button, async () => {
      try {
        await enablePush();
        message.hidden = true;
        await changed();
      } catch (error) {
        message.textContent = error.message || "Notifications could not be enabled.";
        message.hidden = false;
      }
    }),
  );
  return h("div", { class: "stack" }, h("div", { class: "row" }, button), message);
}

const PLATFORMS = { ios: "iPhone/iPad app", android: "Android app", web: "Browser notifications", webhook: "Webhook", live: "Open app" };

function deviceItem(device, endpoint, reload, fail) {
  const remove = action(
    "Remove",
    "danger",
    async () => {
      await api("DELETE", `/api/devices/${device.id}`);
      await reload();
    },
    fail,
  );
  const here =
    (device.platform === "live" && isLiveToken(device.tokenPrefix)) ||
    (device.platform === "web" && endpoint && endpoint.startsWith(device.tokenPrefix));
  return h(
    "li",
    { class: "card stack" },
    h("h3", {}, device.name || PLATFORMS[device.platform] || device.platform, here ? h("span", { class: "muted" }, " (this browser)") : null),
    h(
      "p",
      { class: "muted small" },
      `${PLATFORMS[device.platform] || device.platform}${device.isActive ? "" : " · inactive"} · last delivery `,
      when(device.lastDeliveredAt),
    ),
    h("div", { class: "row" }, remove),
  );
}

function passwordForm() {
  const current = field("Current password", "currentPassword", { type: "password", autocomplete: "current-password", required: true });
  const next = field("New password", "newPassword", { type: "password", autocomplete: "new-password", required: true, minlength: 8 });
  const button = h("button", { type: "submit" }, "Change password");
  const done = h("p", { role: "status", class: "muted" });
  const form = h("form", { class: "stack card", novalidate: true }, current.wrap, next.wrap, formError(), h("div", { class: "row" }, button), done);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    done.textContent = "";
    await busy(button, async () => {
      try {
        // Every session ends, this browser's too: it signs in anew with the new one.
        await changePassword(current.control.value, next.control.value);
        clearErrors(form);
        form.reset();
        done.textContent = "Password changed. Your other sessions are signed out.";
      } catch (error) {
        showError(form, error, { unauthorized: "currentPassword" });
      }
    });
  });
  return form;
}
