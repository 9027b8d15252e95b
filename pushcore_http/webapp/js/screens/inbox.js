// Inbox: entries live from the channel, unread marked, Mark all read, older pages as you scroll.
import { api } from "../api.js";
import { fill, h, when } from "../dom.js";
import * as live from "../live.js";

const PAGE = 30;
const APP_ICON = "/app/icons/icon-192.png";

export async function render(root) {
  const list = h("ul", { class: "inbox", "aria-label": "Notifications" });
  const unreadLine = h("p", { class: "muted", "aria-live": "polite" });
  const markAll = h("button", { type: "button", class: "secondary" }, "Mark all read");
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load older");
  const empty = h("p", { class: "muted", hidden: true }, "Nothing yet. Notifications sent to you appear here as they arrive.");
  const problem = h("p", { class: "error", role: "alert", hidden: true });
  const entries = new Map(); // id -> {entry, element}
  let cursor = null;
  let loading = false;
  let unread = 0;
  const highlight = new URLSearchParams(location.search).get("notification");

  const setUnread = (count) => {
    unread = count;
    unreadLine.textContent = count === 1 ? "1 unread" : `${count} unread`;
    markAll.disabled = count === 0;
  };

  const show = (entry, atTop) => {
    if (entries.has(entry.id)) return false;
    const element = item(entry, { read, dismiss });
    entries.set(entry.id, { entry, element });
    if (atTop) list.prepend(element);
    else list.append(element);
    empty.hidden = true;
    if (highlight && entry.notificationId === highlight) {
      element.classList.add("highlight");
      element.scrollIntoView({ block: "center" });
      if (!entry.readAt) read([entry.id]);
    }
    return true;
  };

  const markRead = (ids) => {
    for (const id of ids) {
      const known = entries.get(id);
      if (!known || known.entry.readAt) continue;
      known.entry.readAt = new Date().toISOString();
      const fresh = item(known.entry, { read, dismiss });
      if (known.element.classList.contains("highlight")) fresh.classList.add("highlight");
      known.element.replaceWith(fresh);
      known.element = fresh;
    }
  };

  async function read(ids) {
    try {
      const answer = await api("POST", "/api/inbox/read", { ids });
      markRead(ids);
      setUnread(answer.unread);
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
    known.element.remove();
    entries.delete(id);
    empty.hidden = entries.size > 0;
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
      const answer = await api("GET", `/api/inbox?${query}`);
      for (const entry of answer.items) {
        show(entry, false);
        live.seen(entry.id);
      }
      cursor = answer.nextCursor;
      more.hidden = !cursor;
      setUnread(answer.unread);
      empty.hidden = entries.size > 0;
      problem.hidden = true;
    } catch (error) {
      fail(error);
    } finally {
      loading = false;
    }
  }

  markAll.addEventListener("click", async () => {
    const newest = list.firstElementChild?.dataset.id;
    if (!newest) return;
    try {
      const answer = await api("POST", "/api/inbox/read", { upTo: newest });
      markRead([...entries.keys()].filter((id) => id <= newest));
      setUnread(answer.unread);
    } catch (error) {
      fail(error);
    }
  });
  more.addEventListener("click", page);

  fill(
    root,
    h("h1", {}, "Inbox"),
    h("div", { class: "row" }, unreadLine, markAll),
    problem,
    empty,
    list,
    more,
  );
  await page();

  // History as you scroll: the next page when the end comes into view (the button stays for keyboards).
  const observer = new IntersectionObserver((seen) => {
    if (seen.some((e) => e.isIntersecting) && cursor) page();
  });
  observer.observe(more);

  const stopListening = live.listen(({ type, data }) => {
    if (type === "notification") {
      if (show(data, true) && !data.readAt) setUnread(unread + 1);
    } else if (type === "read") {
      markRead(data.ids || []);
      setUnread(data.unread);
    } else if (type === "dismissed") {
      remove(data.id);
    }
  });
  return () => {
    observer.disconnect();
    stopListening();
  };
}

function item(entry, actions) {
  const from = entry.sender?.name || entry.stream?.name || null;
  const icon = entry.sender?.icon || APP_ICON;
  const unread = !entry.readAt;
  return h(
    "li",
    { class: `card entry${unread ? " unread" : ""}`, dataset: { id: entry.id, notification: entry.notificationId } },
    h("img", { class: "icon", src: icon, alt: "", width: 40, height: 40, loading: "lazy", referrerpolicy: "no-referrer" }),
    h(
      "div",
      {},
      unread ? h("span", { class: "badge" }, "Unread") : null,
      h("h2", {}, entry.title),
      entry.body ? h("p", {}, entry.body) : null,
      h(
        "p",
        { class: "muted small" },
        from ? `${from} · ` : "",
        when(entry.deliveredAt),
      ),
      h(
        "div",
        { class: "row" },
        unread
          ? h("button", { type: "button", class: "secondary", onclick: () => actions.read([entry.id]) }, "Mark read")
          : null,
        h("button", { type: "button", class: "secondary", onclick: () => actions.dismiss(entry.id) }, "Dismiss"),
      ),
    ),
  );
}
