// Inbox: compact entries grouped by day, live from the channel; the stream's icon and
// name, priority in words and colour, unread marked; each entry's actions behind a
// menu; a filter by stream; older pages as you scroll.
import { api } from "../api.js";
import { fill, h, menu, when } from "../dom.js";
import { avatar, dayKey, dayLabel, entryTime, priorityLabel, sourceOf } from "../format.js";
import * as live from "../live.js";

const PAGE = 30;
// A filtered view loads older pages by itself until it has this many entries to show,
// or this many pages were read for it (the rest comes as you scroll).
const FILTER_FILL = 15;
const FILTER_PAGES = 5;
const COUNT_TRIES = 4; // an answer's count and up to three questions again (answered below)
const ALL = "";
const DIRECT = "direct";

export async function render(root) {
  const list = h("ul", { class: "inbox", "aria-label": "Notifications" });
  const unreadLine = h("p", { class: "muted", "aria-live": "polite" });
  const markAll = h("button", { type: "button", class: "secondary" }, "Mark all read");
  const more = h("button", { type: "button", class: "secondary more", hidden: true }, "Load older");
  const filter = h("select", { id: "inbox-filter", name: "stream" }, h("option", { value: ALL }, "All streams"));
  const filterField = h("div", { class: "filter" }, h("label", { for: "inbox-filter" }, "Show"), filter);
  const empty = emptyState();
  const nothingHere = h("p", { class: "muted", hidden: true }, "Nothing from this stream among the entries loaded.");
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const entries = new Map(); // id -> {entry, element}
  const icons = new Map(); // stream id -> icon URL
  let cursor = null;
  let loading = false;
  let unread = 0;
  const highlight = new URLSearchParams(location.search).get("notification");

  const setUnread = (count) => {
    unread = count;
    unreadLine.textContent = `${count} unread`;
    markAll.disabled = count === 0;
  };
  // An answer's `unread` is the server's count when it answered. A live event that changed
  // the count while the question was out may or may not be in it (an entry shown live
  // before a first page read without it was counted, then overwritten): such an answer's
  // count is asked again until no event came between; if events keep coming, theirs stands.
  let countChanges = 0;
  const liveUnread = (count) => {
    countChanges += 1;
    setUnread(count);
  };
  const answered = async (count, asked) => {
    for (let tries = 0; tries < COUNT_TRIES; tries += 1) {
      if (asked === countChanges) {
        setUnread(count);
        return;
      }
      asked = countChanges;
      try {
        ({ unread: count } = await api("GET", "/api/inbox?limit=1"));
      } catch {
        return;
      }
    }
  };

  const actions = { read, dismiss };
  const matches = (entry) =>
    filter.value === ALL || (filter.value === DIRECT ? !entry.stream : entry.stream?.id === filter.value);

  const addStream = (stream) => {
    if (!stream || filter.querySelector(`option[value="${CSS.escape(stream.id)}"]`)) return;
    filter.append(h("option", { value: stream.id }, stream.name));
  };

  const show = (entry, atTop) => {
    if (entries.has(entry.id)) return false;
    const element = item(entry, icons, actions);
    element.hidden = !matches(entry);
    entries.set(entry.id, { entry, element });
    addStream(entry.stream);
    if (atTop === "sorted") {
      // Newest first by id (ids begin with the creation time): caught up after a gap.
      const after = [...list.children].find((other) => other.dataset.id < entry.id);
      list.insertBefore(element, after ?? null);
    } else if (atTop) list.prepend(element);
    else list.append(element);
    days(element);
    days(element.nextElementSibling);
    if (highlight && entry.notificationId === highlight) {
      element.classList.add("highlight");
      element.scrollIntoView({ block: "center" });
      if (!entry.readAt) read([entry.id]);
    }
    return true;
  };

  const refreshEmpty = () => {
    empty.hidden = entries.size > 0;
    nothingHere.hidden = entries.size === 0 || [...entries.values()].some((e) => !e.element.hidden);
  };

  const markRead = (ids) => {
    for (const id of ids) {
      const known = entries.get(id);
      if (!known || known.entry.readAt) continue;
      known.entry.readAt = new Date().toISOString();
      known.element.classList.remove("unread");
      known.element.querySelector(".unread-mark")?.remove();
      const old = known.element.querySelector(".menu-wrap");
      const focused = old.contains(document.activeElement);
      const fresh = entryMenu(known.entry, actions);
      old.replaceWith(fresh);
      if (focused) fresh.querySelector("button").focus();
    }
  };

  async function read(ids) {
    try {
      const asked = countChanges;
      const answer = await api("POST", "/api/inbox/read", { ids });
      markRead(ids);
      await answered(answer.unread, asked);
    } catch (error) {
      fail(error);
    }
  }

  async function dismiss(id) {
    try {
      await api("DELETE", `/api/inbox/${id}`);
      remove(id);
    } catch (error) {
      fail(error);
    }
  }

  const remove = (id) => {
    const known = entries.get(id);
    if (!known) return;
    const next = known.element.nextElementSibling;
    known.element.remove();
    entries.delete(id);
    days(next);
    refreshEmpty();
  };

  const fail = (error) => {
    problem.textContent = error.message;
    problem.hidden = false;
  };

  async function page() {
    if (loading) return;
    loading = true;
    try {
      const query = new URLSearchParams({ limit: String(PAGE) });
      if (cursor) query.set("cursor", cursor);
      const asked = countChanges;
      const answer = await api("GET", `/api/inbox?${query}`);
      for (const entry of answer.items) {
        show(entry, false);
        live.seen(entry.id);
      }
      cursor = answer.nextCursor;
      more.hidden = !cursor;
      refreshEmpty();
      problem.hidden = true;
      await answered(answer.unread, asked);
    } catch (error) {
      fail(error);
    } finally {
      loading = false;
    }
  }

  async function catchUp() {
    try {
      const asked = countChanges;
      const answer = await api("GET", `/api/inbox?limit=${PAGE}`);
      for (const entry of [...answer.items].reverse()) {
        show(entry, "sorted");
        live.seen(entry.id);
      }
      refreshEmpty();
      await answered(answer.unread, asked);
    } catch {
      // Offline again: the next opening of the channel tries again.
    }
  }

  // A narrow filter may match little of what is loaded: read a few pages more for it.
  async function fillFiltered() {
    for (let pages = 0; pages < FILTER_PAGES && cursor && filter.value !== ALL; pages += 1) {
      const shown = [...entries.values()].filter((e) => !e.element.hidden).length;
      if (shown >= FILTER_FILL) break;
      await page();
    }
  }

  markAll.addEventListener("click", async () => {
    const newest = list.firstElementChild?.dataset.id;
    if (!newest) return;
    try {
      const asked = countChanges;
      const answer = await api("POST", "/api/inbox/read", { upTo: newest });
      markRead([...entries.keys()].filter((id) => id <= newest));
      await answered(answer.unread, asked);
    } catch (error) {
      fail(error);
    }
  });
  more.addEventListener("click", page);
  filter.addEventListener("change", async () => {
    for (const { entry, element } of entries.values()) element.hidden = !matches(entry);
    allDays(list);
    refreshEmpty();
    await fillFiltered();
  });

  fill(
    root,
    h("div", { class: "screen-head" }, h("h1", {}, "Inbox"), unreadLine),
    h("div", { class: "toolbar" }, filterField, markAll),
    problem,
    empty,
    nothingHere,
    list,
    more,
  );
  // Listening before the first page is asked for: an entry that arrives meanwhile is
  // shown (the page's copy is then skipped), and a channel that opens without a resume
  // point (nothing was shown yet) reads the first page again for what fell between.
  const stopListening = live.listen(({ type, data }) => {
    if (type === "opened") {
      if (!data.resumed) catchUp();
    } else if (type === "notification") {
      if (show(data, true) && !data.readAt) liveUnread(unread + 1);
      refreshEmpty();
    } else if (type === "read") {
      markRead(data.ids || []);
      liveUnread(data.unread);
    } else if (type === "dismissed") {
      remove(data.id);
    } else if (type === "withdrawn") {
      // Withdrawn, expired, or replaced (a `notification` event with the new entry follows).
      for (const id of data.ids || []) {
        const known = entries.get(id);
        if (known && !known.entry.readAt) liveUnread(Math.max(0, unread - 1));
        remove(id);
      }
    }
  });
  // The streams' icons and names, for the entries and the filter.
  const [subscriptions] = await Promise.all([api("GET", "/api/streams/subscriptions").catch(() => []), page()]);
  for (const { stream } of subscriptions) {
    if (stream.iconUrl) icons.set(stream.id, stream.iconUrl);
    addStream(stream);
  }
  filter.append(h("option", { value: DIRECT }, "Direct notifications"));
  for (const { entry, element } of entries.values()) {
    if (!entry.sender?.icon && icons.has(entry.stream?.id)) element.querySelector(".icon").replaceWith(icon(entry, icons));
  }

  // History as you scroll: the next page when the end comes into view (the button stays for keyboards).
  const observer = new IntersectionObserver((seen) => {
    if (seen.some((e) => e.isIntersecting) && cursor) page().then(fillFiltered);
  });
  observer.observe(more);

  return () => {
    observer.disconnect();
    stopListening();
  };
}

function emptyState() {
  return h(
    "div",
    { class: "empty", hidden: true },
    h("h2", {}, "No notifications yet"),
    h(
      "p",
      {},
      "Follow a stream to see what it sends here: enter its code in Subscriptions, ",
      "or open a share link someone sent you.",
    ),
    h("p", {}, h("a", { class: "button", href: "/app/subscriptions" }, "Follow a stream")),
  );
}

/**
 * Day headings: an entry that starts a day (among those shown) carries the day's
 * heading. Called for each entry whose neighbour above may have changed.
 */
function days(start) {
  let element = start;
  while (element?.hidden) {
    element.querySelector(":scope > .day")?.remove();
    element = element.nextElementSibling;
  }
  if (!element) return;
  element.querySelector(":scope > .day")?.remove();
  let above = element.previousElementSibling;
  while (above?.hidden) above = above.previousElementSibling;
  const day = element.dataset.day;
  if (above && above.dataset.day === day) return;
  element.prepend(h("h2", { class: "day" }, dayLabel(new Date(element.dataset.at))));
  // The entry below may have carried this day's heading until now.
  let below = element.nextElementSibling;
  while (below?.hidden) below = below.nextElementSibling;
  if (below && below.dataset.day === day) below.querySelector(":scope > .day")?.remove();
}

/** Day headings over the whole list, in one pass (after the filter changed). */
function allDays(list) {
  let day = null;
  for (const element of list.children) {
    element.querySelector(":scope > .day")?.remove();
    if (element.hidden || element.dataset.day === day) continue;
    day = element.dataset.day;
    element.prepend(h("h2", { class: "day" }, dayLabel(new Date(element.dataset.at))));
  }
}

function icon(entry, icons) {
  const url = entry.sender?.icon || icons.get(entry.stream?.id);
  if (url) {
    return h("img", { class: "icon", src: url, alt: "", width: 40, height: 40, loading: "lazy", referrerpolicy: "no-referrer" });
  }
  const { letter, shade } = avatar(entry.stream?.name || entry.sender?.name || entry.title);
  return h("span", { class: `icon avatar shade-${shade}`, "aria-hidden": "true" }, letter);
}

function entryMenu(entry, actions) {
  const items = [];
  if (!entry.readAt) items.push(["Mark read", () => actions.read([entry.id])]);
  items.push(["Dismiss", () => actions.dismiss(entry.id)]);
  return menu(`Actions for ${entry.title}`, items);
}

function item(entry, icons, actions) {
  const unread = !entry.readAt;
  const priority = priorityLabel(entry.priority);
  const delivered = new Date(entry.deliveredAt);
  const element = h(
    "li",
    {
      class: `entry${unread ? " unread" : ""}${priority ? ` priority-${entry.priority}` : ""}`,
      dataset: { id: entry.id, notification: entry.notificationId, day: dayKey(delivered), at: entry.deliveredAt },
    },
    h(
      "div",
      { class: "entry-row" },
      icon(entry, icons),
      h(
        "div",
        { class: "entry-text" },
        h(
          "p",
          { class: "entry-meta" },
          // A dot on screen; the word for screen readers (and for the tests).
          unread ? h("span", { class: "unread-mark" }, h("span", { class: "sr-only" }, "Unread")) : null,
          h("span", { class: "source" }, sourceOf(entry)),
          h("span", { "aria-hidden": "true" }, " · "),
          when(entry.deliveredAt, (date) => entryTime(date)),
        ),
        h("h3", { class: "entry-title" }, priority ? [h("span", { class: "priority" }, priority), " "] : null, entry.title),
        entry.body ? h("p", { class: "entry-body" }, entry.body) : null,
      ),
      entryMenu(entry, actions),
    ),
  );
  // A tap on an unread entry reads it, as in a mail or chat app (the menu is the keyboard's way).
  element.addEventListener("click", (event) => {
    if (!element.classList.contains("unread") || event.target.closest(".menu-wrap, a")) return;
    actions.read([entry.id]);
  });
  return element;
}
