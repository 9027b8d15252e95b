// The app's state in one place: who is signed in, whether the server answers, how
// the live channel stands, and what the sign-in screen should say. Modules change
// it with set() and hear changes with watch(); the views re-render from it.

const state = {
  account: null, // {id, plan} while signed in
  reachable: true, // the server answered the last request
  live: "off", // the live channel: "off", "live", "reconnecting" or "offline"
  notice: null, // a sentence for the sign-in screen ("You have signed out.")
  signInError: null, // why a single sign-on failed
};
const watchers = new Set();

/** The current state (read only: change it with set()). */
export function get() {
  return state;
}

/** Change some fields; watchers hear the names of those that changed. */
export function set(changes) {
  const changed = Object.keys(changes).filter((key) => state[key] !== changes[key]);
  if (!changed.length) return;
  Object.assign(state, changes);
  for (const watcher of [...watchers]) watcher(state, new Set(changed));
}

/** Hear every change: watcher(state, changedNames); returns the way to stop. */
export function watch(watcher) {
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}
