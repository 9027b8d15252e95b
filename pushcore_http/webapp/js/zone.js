// An account still on the server's default zone (UTC) takes this browser's zone once
// signed in (API.md: "the app sets it from the browser"); Settings waits for that.
import { api } from "./api.js";

let adopting = null;

/** This browser's IANA zone ("UTC" when it says none). */
export function browserZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** Give an account still on UTC this browser's zone (once per sign-in). */
export function adoptBrowserZone() {
  adopting = (async () => {
    const zone = browserZone();
    const account = await api("GET", "/api/account");
    if (account.timeZone !== "UTC" || zone === "UTC") return account;
    return api("PATCH", "/api/account", { timeZone: zone });
  })().catch(() => null);
  return adopting;
}

/** Settled once the zone of this sign-in has been looked at (and set). */
export function zoneAdopted() {
  return adopting;
}
