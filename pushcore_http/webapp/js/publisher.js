// Creating streams and sending to them take an API key (the pinned API), not the
// session's token, and so do reading and changing what was sent (a stream's Sent list).
// The app makes one for itself when first needed, scoped to notifications:read and
// notifications:write and expiring in 12 hours, keeps it in memory only and
// revokes it at sign-out. Settings leaves it (and those of earlier visits) out of
// the person's keys: it is the app's, not theirs.
import { api, apiWithKey } from "./api.js";

/** The name of the keys the app makes for itself. */
export const NAME = "Web app (publishing)";
const LIFETIME_MS = 12 * 3600 * 1000;
let key = null; // {id, key, expiresAt}

let making = null; // the key being made: calls at once share it

function ensure() {
  if (key && key.expiresAt - Date.now() > 60000) return Promise.resolve(key);
  making ||= (async () => {
    const expiresAt = new Date(Date.now() + LIFETIME_MS);
    const created = await api("POST", "/api/keys", {
      name: NAME,
      scopes: ["notifications:read", "notifications:write"],
      expiresAt: expiresAt.toISOString(),
    });
    key = { id: created.id, key: created.key, expiresAt: expiresAt.getTime() };
    return key;
  })().finally(() => {
    making = null;
  });
  return making;
}

/** A call that needs an API key with notifications:read or notifications:write. */
export async function publish(method, path, body, headers) {
  const { key: secret } = await ensure();
  return apiWithKey(secret, method, path, body, headers);
}

/** Revoke the app's key (sign-out). */
export async function forget() {
  if (!key) return;
  const id = key.id;
  key = null;
  await api("DELETE", `/api/keys/${id}`).catch(() => {});
}
