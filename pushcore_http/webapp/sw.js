// pushcore's service worker (scope /app/): keeps the app's shell for offline
// starts, and shows Web Push messages.
const CACHE = "pushcore-app-__APP_VERSION__";
const SHELL = [
  "/app/",
  "/app/app.css",
  "/app/manifest.webmanifest",
  "/app/js/main.js",
  "/app/js/api.js",
  "/app/js/dom.js",
  "/app/js/format.js",
  "/app/js/sse.js",
  "/app/js/state.js",
  "/app/js/live.js",
  "/app/js/device.js",
  "/app/js/publisher.js",
  "/app/js/times.js",
  "/app/js/zone.js",
  "/app/js/screens/inbox.js",
  "/app/js/screens/quiet.js",
  "/app/js/screens/schedules.js",
  "/app/js/screens/send.js",
  "/app/js/screens/sent.js",
  "/app/js/screens/settings.js",
  "/app/js/screens/signin.js",
  "/app/js/screens/streams.js",
  "/app/js/screens/subscriptions.js",
  "/app/icons/icon-192.png",
  "/app/icons/badge-96.png",
];
const APP_ICON = "/app/icons/icon-192.png";

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith("pushcore-app-") && n !== CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

// The shell from the network when it answers (so an update shows at once), from
// the cache when it does not. The API and the session are never cached.
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin) return;
  if (!url.pathname.startsWith("/app/") || url.pathname.startsWith("/app/session/")) return;
  const isPage = event.request.mode === "navigate";
  event.respondWith(
    fetch(event.request)
      .then((response) => {
        if (response.ok && !isPage && SHELL.includes(url.pathname)) {
          const copy = response.clone();
          caches.open(CACHE).then((cache) => cache.put(event.request, copy));
        }
        return response;
      })
      .catch(async () => {
        const cache = await caches.open(CACHE);
        return (await cache.match(isPage ? "/app/" : event.request)) || Response.error();
      }),
  );
});

// The tag a notification is shown with: one per thing that changes (its collapse key),
// else one per notification, so that a withdrawal can find what it showed.
const tagOf = (payload) => payload.collapseKey || payload.notificationId || undefined;

// A withdrawal closes what was shown for that notification: under its own id's tag, or
// under its collapse key's while it is still the one shown there (a newer one that took
// the tag since stays).
async function withdraw(payload) {
  const tags = [payload.collapseKey, payload.notificationId].filter(Boolean);
  for (const tag of tags) {
    for (const n of await self.registration.getNotifications({ tag })) {
      if (tag === payload.notificationId || n.data?.notificationId === payload.notificationId) n.close();
    }
  }
}

// A push is the platform-neutral payload (API.md, "Delivery payloads"), or a withdrawal
// `{event: "withdrawn", notificationId, collapseKey}`.
self.addEventListener("push", (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch {
    payload = { title: event.data ? event.data.text() : "pushcore" };
  }
  if (payload.event === "withdrawn") {
    event.waitUntil(withdraw(payload));
    return;
  }
  const from = payload.sender?.name || payload.stream?.name || null;
  const lines = [from, payload.body].filter(Boolean);
  const receipt = typeof payload.receipt === "string" ? payload.receipt : null;
  event.waitUntil(
    self.registration
      .showNotification(payload.title || "pushcore", {
        body: lines.join("\n"),
        icon: payload.sender?.icon || APP_ICON,
        badge: "/app/icons/badge-96.png",
        tag: tagOf(payload),
        data: { notificationId: payload.notificationId || null, receipt },
      })
      .then(() => report(receipt, "displayed")),
  );
});

// Tells the sender's server that this delivery was displayed or opened (API.md,
// "Following up"): the token is the proof, so no credential (nor cookie) goes with it.
// A receipt that cannot be sent is not retried: it is a courtesy, never a condition.
function report(receipt, what) {
  if (!receipt) return Promise.resolve();
  return fetch("/api/receipts", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: receipt, event: what }),
    credentials: "omit",
  }).catch(() => undefined);
}

// A click opens the app at that entry, in an open window of the app if there is one.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const id = event.notification.data?.notificationId;
  const target = id ? `/app/?notification=${encodeURIComponent(id)}` : "/app/";
  const reported = report(event.notification.data?.receipt, "opened");
  event.waitUntil(
    Promise.all([
      reported,
      self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((windows) => {
        const open = windows.find((w) => new URL(w.url).pathname.startsWith("/app/"));
        if (open) return open.navigate(target).then((w) => (w || open).focus());
        return self.clients.openWindow(target);
      }),
    ]),
  );
});
