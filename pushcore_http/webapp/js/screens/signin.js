// Sign in: Account, Password, Sign in; the provider's button with OIDC; Create account with sign-up.
import * as session from "../api.js";
import { busy, field, fill, formError, h, showError } from "../dom.js";

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

export async function render(root, context) {
  const offered = await loadMethods();
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
    { class: "stack card", novalidate: true },
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
  const problem = context.signInError();
  if (problem) {
    error.textContent = problem;
    error.hidden = false;
  }
  fill(
    root,
    h("h1", {}, "Sign in"),
    offered.password === false ? null : form,
    sso,
  );
  account.control.focus();
}
