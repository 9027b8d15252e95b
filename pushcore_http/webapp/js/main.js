// The app's entry: the session, the router, the status line and the live channel.
import * as session from "./api.js";
import { forgetThisBrowser, registerLive } from "./device.js";
import { fill, h } from "./dom.js";
import * as live from "./live.js";
import { forget } from "./publisher.js";
import * as state from "./state.js";
import * as inbox from "./screens/inbox.js";
import { adoptBrowserZone } from "./zone.js";
import * as settings from "./screens/settings.js";
import * as signin from "./screens/signin.js";
import * as streams from "./screens/streams.js";
import * as subscriptions from "./screens/subscriptions.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const statusLine = document.getElementById("status");
const who = document.getElementById("who");
let cleanup = null;
let rendered = false;
// The screen on show (path and query), and which render is the latest: an older one
// that finishes late must not set the title or keep its listeners.
let shown = null;
let renders = 0;
// While booting, the boot renders once at its end (a resumed session would render too).
let booting = true;

function route(path) {
  const rest = path.replace(/^\/app\/?/, "").replace(/\/$/, "");
  if (rest === "" || rest === "inbox") return { name: "inbox", screen: inbox };
  if (rest === "subscriptions") return { name: "subscriptions", screen: subscriptions };
  if (rest === "streams") return { name: "streams", screen: streams };
  if (rest === "settings") return { name: "settings", screen: settings };
  const share = rest.match(/^subscribe\/([a-z0-9-]{1,64})$/);
  if (share) return { name: "subscriptions", screen: subscriptions, params: { code: share[1] } };
  return { name: null, screen: { render: notFound } };
}

function notFound(root) {
  fill(root, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "/app/" }, "Go to the inbox")));
}

/** Show another screen (pushState), as a link would. */
export function navigate(path) {
  history.pushState(null, "", path);
  render(true);
}

const context = {
  navigate,
  signOut: async () => {
    live.stop();
    await forget();
    // Before the tokens go: nothing may reach this browser once signed out.
    await forgetThisBrowser();
    await session.signOut();
  },
};

async function render(moved = false) {
  if (cleanup) cleanup();
  cleanup = null;
  const mine = ++renders;
  shown = location.pathname + location.search;
  // Every screen opens at its top, the navigation in view (API.md, "The web app").
  if (moved) window.scrollTo(0, 0);
  const current = route(location.pathname);
  const account = session.currentAccount();
  nav.hidden = !account;
  who.hidden = !account;
  document.body.classList.toggle("signed-in", Boolean(account));
  document.getElementById("who-id").textContent = account ? account.id : "";
  if (!account) {
    document.title = "Sign in · pushcore";
    settle(mine, await signin.render(main, context, current.params || {}));
    state.set({ signInError: null });
    return;
  }
  for (const link of nav.querySelectorAll("a")) {
    if (link.dataset.route === current.name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  // A screen puts its content in place before it waits for its data.
  const showing = current.screen.render(main, context, current.params || {});
  // After a move, keyboard and screen-reader focus go to the new screen, without
  // scrolling past the header. Now, not once the data is in: by then the person may
  // have moved into the screen, and focus taken back would lose their place.
  if (moved && rendered) main.focus({ preventScroll: true });
  if (!settle(mine, await showing)) return;
  const heading = main.querySelector("h1");
  document.title = `${heading ? heading.textContent : "pushcore"} · pushcore`;
}

// A render's end: its screen's cleanup kept if it is still the latest, run if not.
function settle(mine, screenCleanup) {
  rendered = true;
  if (mine === renders) {
    cleanup = screenCleanup || null;
    return true;
  }
  if (screenCleanup) screenCleanup();
  return false;
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  // In-page links (the skip link) stay the browser's.
  if (link.getAttribute("href").startsWith("#")) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith("/app/")) return;
  if (link.target || link.hasAttribute("download")) return;
  if (/\.[a-z]+$/.test(url.pathname)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
// A fragment of the same page (the skip link, Back after it) is the browser's: it
// moves focus there itself, and showing the screen again would take focus back.
window.addEventListener("popstate", () => {
  if (location.pathname + location.search !== shown) render(true);
});

// Said within seconds of the live channel losing the server, gone as soon as it is back.
function showStatus({ account, live: channel }) {
  let text = "";
  if (!session.isReachable()) {
    text = "Offline: the server can't be reached. New notifications appear when it is back.";
  } else if (account && channel === "offline") {
    text = "Offline: the server can't be reached. New notifications appear when it is back.";
  } else if (account && channel === "reconnecting") {
    text = "Reconnecting to the server…";
  }
  if (statusLine.textContent !== text) statusLine.textContent = text;
  statusLine.hidden = !text;
}

state.watch((now, changed) => {
  if (changed.has("reachable") || changed.has("live") || changed.has("account")) showStatus(now);
  if (changed.has("reachable") && now.reachable) {
    live.reconnect();
    if (!now.account) resumeSession();
  }
  if (changed.has("account")) {
    if (now.account) {
      live.start();
      registerLive().catch(() => {});
      adoptBrowserZone();
    } else {
      live.stop();
    }
    if (!booting) render(true);
  }
});

async function resumeSession() {
  try {
    return await session.resume();
  } catch {
    return false;
  }
}

// Failures that "try again" would not mend (docs/people.md, single sign-on).
const SIGN_IN_ERRORS = {
  account_exists:
    "Single sign-on failed (account_exists): an account of that name exists and is not " +
    "linked to your sign-on. Sign in with its password, or ask the operator.",
  email_unverified:
    "Single sign-on failed (email_unverified): your provider has not verified your email address.",
  identity_linked:
    "Single sign-on failed (identity_linked): that identity is linked to another account.",
};

async function boot() {
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/app/sw.js", { scope: "/app/" }).catch(() => {});
  }
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.has("signin") || fragment.has("signin-error")) {
    // The one-time code must not stay in the address bar or the history.
    history.replaceState(null, "", location.pathname + location.search);
  }
  if (fragment.has("signin")) {
    try {
      await session.signInWithCode(fragment.get("signin"));
    } catch (error) {
      state.set({ signInError: error.message });
    }
  } else if (fragment.has("signin-error")) {
    const reason = fragment.get("signin-error");
    state.set({ signInError: SIGN_IN_ERRORS[reason] || `Single sign-on failed (${reason}). Try again.` });
  }
  if (!session.currentAccount()) await resumeSession();
  booting = false;
  await render();
  showStatus(state.get());
}

boot();
