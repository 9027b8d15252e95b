// Sign in: Account, Password, Sign in; the provider's button with OIDC; Create account with sign-up.
// Opened from a share link, it names the stream first ("Sign in to follow ..."), and
// the share link's screen follows the sign-in (the address stays the link's).
import * as session from "../api.js";
import { busy, field, fill, formError, h, showError } from "../dom.js";
import * as state from "../state.js";

let methods = null;

async function loadMethods() {
  if (methods) return methods;
  try {
    const response = await fetch("/api/auth/methods");
    if (response.ok) methods = await response.json();
  } catch {
    // Unreachable: show the password form; signing in will say what is wrong.
  }
  return methods || { password: true, signup: false, oidc: null };
}

/**
 * The stream a share link names, asked without a credential: {name, description,
 * iconUrl}, or null where the server wants one (then the page names the code).
 */
async function sharedStream(code) {
  try {
    const response = await fetch(`/api/streams/lookup/${encodeURIComponent(code)}`, {
      credentials: "omit",
    });
    if (response.ok) return { found: await response.json() };
    if (response.status === 404) return { missing: true };
  } catch {
    // Unreachable: the page names the code; signing in will say what is wrong.
  }
  return {};
}

function invitation(code, { found, missing }) {
  if (missing) {
    return [h("h1", {}, "Sign in"), h("p", { class: "error" }, `No stream has the code ${code}.`)];
  }
  if (!found) {
    return [
      h("h1", {}, "Sign in to follow this stream"),
      h("p", { class: "muted" }, "Stream code ", h("code", {}, code)),
    ];
  }
  return [
    h(
      "div",
      { class: "invite" },
      found.iconUrl
        ? h("img", { src: found.iconUrl, alt: "", width: 48, height: 48, referrerpolicy: "no-referrer" })
        : null,
      h("h1", {}, `Sign in to follow ${found.name}`),
    ),
    found.description ? h("p", {}, found.description) : null,
  ];
}

export async function render(root, _context, params = {}) {
  const [offered, shared] = await Promise.all([
    loadMethods(),
    params.code ? sharedStream(params.code) : null,
  ]);
  const account = field("Account", "account", {
    type: "text",
    autocomplete: "username",
    autocapitalize: "none",
    spellcheck: "false",
    required: true,
  });
  const password = field("Password", "password", {
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const error = formError();
  const signInButton = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "stack card narrow", novalidate: true },
    account.wrap,
    password.wrap,
    error,
    h("div", { class: "row" }, signInButton),
  );
  const submit = async (action, button) => {
    if (!account.control.value.trim() || !password.control.value) {
      showError(form, {
        message: "",
        details: [
          ...(account.control.value.trim() ? [] : [{ field: "account", message: "Enter your account name" }]),
          ...(password.control.value ? [] : [{ field: "password", message: "Enter your password" }]),
        ],
      });
      return;
    }
    await busy(button, async () => {
      try {
        await action(account.control.value.trim(), password.control.value);
      } catch (failure) {
        showError(form, failure, { unauthorized: "password", account_exists: "account" });
      }
    });
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(session.signIn, signInButton);
  });
  if (offered.signup) {
    const create = h("button", { type: "button", class: "secondary" }, "Create account");
    create.addEventListener("click", () => {
      password.control.setAttribute("autocomplete", "new-password");
      submit(session.signUp, create);
    });
    form.lastChild.append(create);
  }
  const sso = offered.oidc
    ? h(
        "p",
        {},
        h(
          "a",
          { class: "button", href: `/api/auth/oidc/start?next=${encodeURIComponent(location.pathname)}` },
          offered.oidc.name,
        ),
      )
    : null;
  const { signInError: problem, notice } = state.get();
  if (problem) {
    error.textContent = problem;
    error.hidden = false;
  }
  fill(
    root,
    notice ? h("p", { class: "notice", role: "status" }, notice) : null,
    shared ? invitation(params.code, shared) : h("h1", {}, "Sign in"),
    offered.password === false ? null : form,
    sso,
  );
  account.control.focus();
}
