// A few DOM helpers instead of a framework: the screens are forms and lists.
import { ago } from "./format.js";

/** An element: h("button", {class: "x", onclick: f}, "text", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let counter = 0;
/** A unique id for labels and descriptions. */
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A labelled field: the label, the control, and a place for its error. */
export function field(label, name, attrs = {}, kind = "input") {
  const id = uid(name);
  const errorId = `${id}-error`;
  const control = h(kind, { id, name, "aria-describedby": errorId, ...attrs });
  const error = h("p", { id: errorId, class: "error", hidden: true });
  const wrap = h("div", { class: "field" }, h("label", { for: id }, label), control, error);
  return { wrap, control, error };
}

/** Clear a form's errors. */
export function clearErrors(form) {
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  for (const el of form.querySelectorAll(".error")) {
    el.textContent = "";
    el.hidden = true;
  }
}

/**
 * Show an API error in a form: each detail beside the field it names (by
 * name, or through `aliases`), the rest in the form's general error line.
 */
export function showError(form, error, aliases = {}) {
  clearErrors(form);
  const general = form.querySelector(".form-error");
  let placed = false;
  for (const detail of error.details || []) {
    const name = aliases[detail.field] || detail.field;
    const control = form.querySelector(`[name="${CSS.escape(name)}"]`);
    const target = control && document.getElementById(control.getAttribute("aria-describedby"));
    if (!target) continue;
    control.setAttribute("aria-invalid", "true");
    target.textContent = sentence(detail.message);
    target.hidden = false;
    placed = true;
  }
  const field = aliases[error.code] && form.querySelector(`[name="${aliases[error.code]}"]`);
  if (!placed && field) {
    const target = document.getElementById(field.getAttribute("aria-describedby"));
    field.setAttribute("aria-invalid", "true");
    target.textContent = error.message;
    target.hidden = false;
    field.focus();
    return;
  }
  if (!placed && general) {
    general.textContent = error.message;
    general.hidden = false;
  }
  const first = form.querySelector('[aria-invalid="true"]');
  if (first) first.focus();
}

function sentence(text) {
  const s = String(text || "");
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A form's general error line (for errors that concern no one field). */
export function formError() {
  return h("p", { class: "error form-error", role: "alert", hidden: true });
}

/** A list's error line: `line` (hidden until `fail(error)` shows the error's message) and
 *  `clear()` (hides it again before the next load). */
export function alertLine() {
  const line = h("p", { class: "error", role: "alert", hidden: true });
  const fail = (error) => {
    line.textContent = error.message;
    line.hidden = false;
  };
  return { line, fail, clear: () => (line.hidden = true) };
}

/** A time in a <time> element: relative ("3 min ago") unless `words` says otherwise. */
export function when(iso, words = ago) {
  if (!iso) return h("span", {}, "never");
  const date = new Date(iso);
  return h("time", { datetime: iso, title: date.toLocaleString() }, words(date));
}

/** Busy while `work` runs: the button is disabled, its text kept. */
export async function busy(button, work) {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}

/** A button that runs `work` (disabled meanwhile) and hands a failure to `fail`. */
export function action(label, className, work, fail) {
  const button = h("button", { type: "button", class: className }, label);
  button.addEventListener("click", () =>
    busy(button, async () => {
      try {
        await work(button);
      } catch (error) {
        fail(error);
      }
    }),
  );
  return button;
}

/**
 * A compact menu of actions behind one button (an entry's Mark read, Dismiss): the
 * menu button pattern of WAI-ARIA, so the keyboard reaches every action too.
 * `items` are [label, run] pairs; the menu closes before an item runs.
 */
export function menu(label, items, text = null) {
  // With `text`, a button in words (Mute); else the three dots, named by `label`.
  const button = h(
    "button",
    { type: "button", class: text ? "secondary" : "icon-button", "aria-haspopup": "menu", "aria-expanded": "false", "aria-label": label },
    text || h("span", { class: "dots", "aria-hidden": "true" }),
  );
  const entries = items.map(([text, run]) => {
    const item = h("button", { type: "button", role: "menuitem", tabindex: "-1" }, text);
    item.addEventListener("click", () => {
      close(true);
      run();
    });
    return item;
  });
  const list = h("div", { class: "menu", role: "menu", "aria-label": label, hidden: true }, entries);
  const outside = (event) => {
    if (!wrap.contains(event.target)) close(false);
  };
  const open = (first) => {
    list.hidden = false;
    button.setAttribute("aria-expanded", "true");
    entries[first === "last" ? entries.length - 1 : 0]?.focus();
    document.addEventListener("pointerdown", outside);
  };
  function close(refocus) {
    if (list.hidden) return;
    list.hidden = true;
    button.setAttribute("aria-expanded", "false");
    document.removeEventListener("pointerdown", outside);
    if (refocus) button.focus();
  }
  button.addEventListener("click", () => (list.hidden ? open("first") : close(true)));
  button.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      open(event.key === "ArrowUp" ? "last" : "first");
    }
  });
  list.addEventListener("keydown", (event) => {
    const at = entries.indexOf(document.activeElement);
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: entries.length - 1 };
    if (event.key in moves) {
      event.preventDefault();
      entries[(moves[event.key] + entries.length) % entries.length].focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      close(true);
    } else if (event.key === "Tab") {
      close(false);
    }
  });
  const wrap = h("div", { class: "menu-wrap" }, button, list);
  return wrap;
}
