// The session and every call to the server. The access token lives only in
// this module's memory; a reload resumes through /app/session/refresh, whose
// HttpOnly cookie holds the refresh token (no script here can read it).
import * as state from "./state.js";

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(humane(status, body, retryAfter));
    this.status = status;
    this.code = body?.code || (status === 0 ? "unreachable" : "error");
    this.details = body?.details || [];
    this.retryAfter = retryAfter;
  }
}

// What a person should read for an answer, when the API's own words will not do.
function humane(status, body, retryAfter) {
  if (status === 0) return "Can't reach the server. Check your connection and try again.";
  if (status === 429) {
    const wait = retryAfter ? ` in ${retryAfter} s` : " in a moment";
    return `Too many attempts. Try again${wait}.`;
  }
  if (status === 503) return "The server is busy or under maintenance. Try again shortly.";
  if (status >= 500) return "Something went wrong on the server. Try again.";
  const words = {
    own_stream: "This is your own stream: you receive its sends as its publisher.",
    already_subscribed: "You already follow this stream.",
    plan_limit: "Your plan allows no more streams. Delete one to make room.",
    signup_disabled: "This server does not take new accounts.",
    account_exists: "That account name is taken. Pick another one.",
  };
  return words[body?.code] || body?.error || `The server answered ${status}.`;
}

let access = null; // {token, expiresAt}
let refreshTimer = null;
let refreshing = null;

export function currentAccount() {
  return state.get().account;
}

function setReachable(value) {
  state.set({ reachable: value });
}

export function isReachable() {
  return state.get().reachable && navigator.onLine !== false;
}

function adopt(sessionBody) {
  access = {
    token: sessionBody.accessToken,
    expiresAt: Date.now() + sessionBody.expiresIn * 1000,
  };
  clearTimeout(refreshTimer);
  // Renew a little before expiry, so requests and the live channel rarely meet a 401.
  const lead = Math.max(5, sessionBody.expiresIn * 0.8);
  refreshTimer = setTimeout(() => refresh().catch(() => {}), lead * 1000);
  if (currentAccount()?.id !== sessionBody.account.id) {
    state.set({ account: sessionBody.account, notice: null });
  }
}

/** Forget the session; `notice` is what the sign-in screen then says. */
function drop(notice) {
  access = null;
  clearTimeout(refreshTimer);
  if (currentAccount()) state.set({ account: null, notice });
}

/** fetch(), noting whether the server answered; a network failure is ApiError(0). */
async function reach(path, init) {
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    setReachable(false);
    throw new ApiError(0, null);
  }
  setReachable(true);
  return response;
}

/** The answer's JSON body, or an ApiError in words. */
async function answer(response) {
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data, response.headers.get("Retry-After"));
  return data;
}

async function sessionPost(path, body) {
  const response = await reach(`/app/session/${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Pushcore-App": "1" },
    body: JSON.stringify(body || {}),
    credentials: "same-origin",
  });
  return answer(response);
}

/** Sign in with a password; the session is then current. */
export async function signIn(accountName, password) {
  adopt(await sessionPost("login", { account: accountName, password }));
  return currentAccount();
}

/** Create an account (when the server takes sign-ups) and sign in. */
export async function signUp(accountName, password) {
  adopt(await sessionPost("signup", { account: accountName, password }));
  return currentAccount();
}

/** Finish a single sign-on: the one-time code from the callback's fragment. */
export async function signInWithCode(code) {
  adopt(await sessionPost("oidc", { code }));
  return currentAccount();
}

/**
 * A new access token from the cookie's refresh token. Tabs take turns (a Web
 * Lock): a refresh token is single use, and two tabs spending the same one at
 * once would look like theft to the server and sign every session out.
 */
export function refresh() {
  if (refreshing) return refreshing;
  const run = async () => {
    try {
      adopt(await sessionPost("refresh"));
      return true;
    } catch (error) {
      if (error.status === 401) drop("Your session has ended. Sign in again.");
      if (error.status === 0) throw error;
      return false;
    }
  };
  const locked = navigator.locks
    ? navigator.locks.request("pushcore-session-refresh", run)
    : run();
  refreshing = locked.finally(() => {
    refreshing = null;
  });
  return refreshing;
}

/** Resume a session after a reload; false when nobody is signed in here. */
export async function resume() {
  return refresh();
}

/**
 * Change the password. Every session of the account ends with it, this one too
 * (its access token is refused within a second): this browser signs in again with
 * the new password, holding the refresh lock, so that no refresh (the live
 * channel's, another tab's) spends the revoked token meanwhile and signs it out.
 */
export async function changePassword(currentPassword, newPassword) {
  const run = async () => {
    if (!access) throw new ApiError(401, { error: "Signed out", code: "unauthorized" });
    // No refresh-and-retry here (authFetch): a refresh would wait for this lock.
    await answer(
      await reach("/api/auth/password", {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${access.token}` },
        body: JSON.stringify({ currentPassword, newPassword }),
        credentials: "omit",
      }),
    );
    adopt(await sessionPost("login", { account: currentAccount().id, password: newPassword }));
  };
  return navigator.locks ? navigator.locks.request("pushcore-session-refresh", run) : run();
}

/** Sign out: the refresh token revoked, the cookie cleared, memory emptied. */
export async function signOut() {
  try {
    await sessionPost("logout");
  } finally {
    drop("You have signed out.");
  }
}

/**
 * fetch() with the access token; one refresh and retry on a 401. Network
 * failures become ApiError(0) and mark the server unreachable.
 */
export async function authFetch(path, init = {}) {
  for (let attempt = 0; ; attempt += 1) {
    if (!access) throw new ApiError(401, { error: "Signed out", code: "unauthorized" });
    const headers = { ...(init.headers || {}), Authorization: `Bearer ${access.token}` };
    const response = await reach(path, { ...init, headers, credentials: "omit" });
    if (response.status === 401 && attempt === 0 && (await refresh())) continue;
    return response;
  }
}

/** A JSON call: the answer's body, or an ApiError. */
export async function api(method, path, body, extraHeaders = {}) {
  const init = { method, headers: { ...extraHeaders } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  return answer(await authFetch(path, init));
}

/** A call with an API key instead of the token (stream creation and sends take only keys). */
export async function apiWithKey(key, method, path, body, headers = {}) {
  const response = await reach(path, {
    method,
    headers: { "Content-Type": "application/json", "X-API-Key": key, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  return answer(response);
}

window.addEventListener("online", () => setReachable(true));
window.addEventListener("offline", () => setReachable(false));
