// This browser as devices of the account: a `live` device while the app is open
// (so an account whose only device is this app counts as reached), and a `web`
// device once notifications are enabled.
import { api } from "./api.js";

const LIVE_TOKEN = "pushcore.liveDevice";

// The live device's token names this browser, not a secret: it can be read by
// anyone who can read the page, and grants nothing (the channel needs the token).
function liveToken() {
  let token = localStorage.getItem(LIVE_TOKEN);
  if (!token) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    token = `app-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
    localStorage.setItem(LIVE_TOKEN, token);
  }
  return token;
}

/** "Chrome on Android": the browser and the system, from the user agent. */
export function browserName(ua = navigator.userAgent) {
  const browser = /Firefox\//.test(ua)
    ? "Firefox"
    : /Edg\//.test(ua)
      ? "Edge"
      : /Chrome\//.test(ua)
        ? "Chrome"
        : /Safari\//.test(ua)
          ? "Safari"
          : "A browser";
  const system = /Android/.test(ua)
    ? "Android"
    : /iPhone|iPad|iPod/.test(ua)
      ? "iOS"
      : /CrOS/.test(ua)
        ? "ChromeOS"
        : /Windows/.test(ua)
          ? "Windows"
          : /Mac OS X|Macintosh/.test(ua)
            ? "macOS"
            : /Linux/.test(ua)
              ? "Linux"
              : null;
  return system ? `${browser} on ${system}` : browser;
}

/** Register this open app as the account's live device (an idempotent upsert). */
export async function registerLive() {
  return api("POST", "/api/devices", {
    platform: "live",
    token: liveToken(),
    name: `${browserName()} (open app)`,
  });
}

// Said when the shell says this server sends no Web Push (no VAPID subject).
const WEB_PUSH_OFF =
  "This server does not send Web Push yet: its operator has not set a contact for " +
  "push services (PUSHCORE_VAPID_SUBJECT, or an https PUSHCORE_PUBLIC_URL).";

/** Whether this browser can take Web Push at all. */
export function pushSupported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/**
 * Why this browser cannot enable notifications here, in words (null when it can):
 * browsers give Web Push only to https pages (and localhost).
 */
export function pushUnavailable() {
  if (!window.isSecureContext) {
    return (
      "Notifications need a secure connection: this page was opened over http. " +
      "Open the app at its https:// address (the server's operator sets it up)."
    );
  }
  if (document.querySelector('meta[name="pushcore-web-push"]')?.content === "off") {
    return WEB_PUSH_OFF;
  }
  if (!pushSupported()) {
    return (
      "This browser cannot receive notifications from the web. On iPhone and iPad, " +
      "add the app to the home screen first and open it from there."
    );
  }
  if (Notification.permission === "denied") {
    return "Notifications are blocked for this site. Allow them in the browser's site settings.";
  }
  return null;
}

function keyBytes(base64url) {
  const padded = base64url.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(padded + "=".repeat((4 - (padded.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** Ask for permission, subscribe with the server's VAPID key, register a `web` device. */
export async function enablePush() {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new Error("Notifications are blocked for this site. Allow them in the browser's site settings.");
  }
  const registration = await navigator.serviceWorker.ready;
  const { publicKey } = await api("GET", "/api/webpush/vapid-public-key");
  let subscription = await registration.pushManager.getSubscription();
  if (!subscription) {
    subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: keyBytes(publicKey),
    });
  }
  const json = subscription.toJSON();
  return api("POST", "/api/devices", {
    platform: "web",
    token: json.endpoint,
    keys: { p256dh: json.keys.p256dh, auth: json.keys.auth },
    name: `${browserName()} (notifications)`,
  });
}

/** The push endpoint of this browser, if subscribed (to tell which device is this one). */
export async function currentEndpoint() {
  if (!pushSupported()) return null;
  const registration = await navigator.serviceWorker.getRegistration("/app/");
  const subscription = await registration?.pushManager.getSubscription();
  return subscription?.endpoint || null;
}

export function isLiveToken(prefix) {
  return liveToken().startsWith(prefix);
}

async function removeDevice(registration) {
  const device = await registration;
  await api("DELETE", `/api/devices/${device.id}`);
}

/**
 * At sign-out, while the tokens still work: remove this browser's `live` and
 * `web` devices and end its push subscription, so nothing reaches it afterwards.
 * Each device's id comes from registering it again (an idempotent upsert that
 * answers with the account's device for that token), so a registration still
 * under way, or one made by an earlier visit, is found all the same.
 */
export async function forgetThisBrowser() {
  const steps = [removeDevice(registerLive())];
  if (pushSupported()) {
    steps.push(
      (async () => {
        const registration = await navigator.serviceWorker.getRegistration("/app/");
        const subscription = await registration?.pushManager.getSubscription();
        if (!subscription) return;
        const json = subscription.toJSON();
        try {
          await removeDevice(
            api("POST", "/api/devices", {
              platform: "web",
              token: json.endpoint,
              keys: { p256dh: json.keys.p256dh, auth: json.keys.auth },
            }),
          );
        } finally {
          // Even when the server can't be told, the endpoint dies with the subscription.
          await subscription.unsubscribe();
        }
      })(),
    );
  }
  await Promise.allSettled(steps);
}
