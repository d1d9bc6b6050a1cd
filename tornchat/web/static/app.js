// Tornchat's web client: sign-in, then the chat page (header, sidebar, messages, compose).
import { ApiError, currentAuth, forgetAuth, loadAuth, onSignedOutElsewhere } from "./api.js";
import { composeFor, composing, createCompose, refreshCompose } from "./compose.js";
import { startEvents, stopEvents } from "./events.js";
import { register } from "./load.js";
import { renderLogin } from "./login.js";
import { createMessageList, currentNarrow, showNarrow } from "./messages.js";
import { title, views } from "./narrow.js";
import { parseHash, toHash } from "./routes.js";
import { createSidebar, forgetTopics, renderSidebar, setSelected } from "./sidebar.js";
import { onChange, state, totalUnread } from "./state.js";
import { el, toast } from "./ui.js";

const root = document.getElementById("app");
let titleEl = null;
let userEl = null;
let peopleButton = null;
let layout = null;

async function admin(name, ...args) {
  try {
    const module = await import("./admin.js");
    module[name](...args);
  } catch (err) {
    console.error(err);
    toast("This part of the client is not available.", "error");
  }
}

function closeSidebarOnPhone() {
  layout.classList.remove("sidebar-open");
  layout.querySelector(".sidebar-toggle").setAttribute("aria-expanded", "false");
}

/** Shows a narrow: message list, sidebar selection, compose target, address bar. */
export function navigate(narrow, { replace = false } = {}) {
  setSelected(narrow);
  titleEl.textContent = title(narrow);
  // As in Zulip, a message being written keeps its recipient (and its draft) when the view changes.
  if (!composing()) composeFor(narrow);
  const hash = toHash(narrow);
  if (location.hash !== hash) history[replace ? "replaceState" : "pushState"](null, "", hash);
  closeSidebarOnPhone();
  const shown = showNarrow(narrow);
  updateTitle();
  return shown;
}

function header() {
  const toggle = el("button", { type: "button", class: "sidebar-toggle icon-button", "aria-controls": "sidebar", "aria-expanded": "false", "aria-label": "Show conversations", "data-testid": "sidebar-toggle" }, "☰");
  toggle.addEventListener("click", () => {
    const open = layout.classList.toggle("sidebar-open");
    toggle.setAttribute("aria-expanded", String(open));
  });
  const search = el("input", { type: "search", class: "search-input", "data-testid": "search-input", "aria-label": "Search messages", placeholder: "Search" });
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && search.value.trim()) navigate(views.search(search.value.trim()));
    if (e.key === "Escape") search.value = "";
  });
  titleEl = el("h1", { class: "narrow-title", "data-testid": "narrow-title" });
  userEl = el("span", { class: "current-user", "data-testid": "current-user" });
  const channels = el("button", { type: "button", "data-testid": "open-channels" }, "Channels");
  channels.addEventListener("click", () => admin("openChannels"));
  peopleButton = el("button", { type: "button", "data-testid": "open-people" }, "People");
  peopleButton.addEventListener("click", () => admin("openPeople"));
  const logout = el("button", { type: "button", "data-testid": "logout" }, "Sign out");
  logout.addEventListener("click", () => signOut());
  return el(
    "header", { class: "topbar" },
    toggle, titleEl, search,
    el("div", { class: "topbar-actions" }, channels, peopleButton, userEl, logout),
  );
}

function updateTitle() {
  const unread = totalUnread();
  const narrow = currentNarrow();
  document.title = `${unread ? `(${unread}) ` : ""}${narrow ? title(narrow) : "Tornchat"} · Tornchat`;
}

function refreshChrome() {
  userEl.textContent = state.me.full_name;
  userEl.title = state.me.email;
  peopleButton.hidden = !state.me.is_admin;
  const narrow = currentNarrow();
  if (narrow) titleEl.textContent = title(narrow); // a channel or person renamed
  refreshCompose();
  renderSidebar();
}

async function start() {
  root.replaceChildren(el("p", { class: "loading" }, "Loading Tornchat…"));
  try {
    await register();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      forgetAuth();
      renderLogin(root, start, "Your session has ended. Sign in again.");
      return;
    }
    root.replaceChildren(el("p", { class: "loading" }, "Could not reach Tornchat: " + err.message + ". Retrying…"));
    setTimeout(start, 3000);
    return;
  }
  const main = el("main", { class: "content" }, createMessageList(), createCompose());
  const banner = el("div", { class: "connection-banner", role: "status", hidden: true }, "Connection to the server lost. Reconnecting…");
  layout = el("div", { class: "layout" }, header(), banner, el("div", { class: "body" }, createSidebar((n) => navigate(n), (id) => admin("openSubscriptionSettings", id)), main));
  root.replaceChildren(layout);
  refreshChrome();
  startEvents(() => {
    // Re-registered (queue lost or server restarted): state is new; the compose box is untouched.
    forgetTopics();
    refreshChrome();
    showNarrow(currentNarrow());
    toast("Reconnected.", "success");
  });
  navigate(parseHash(location.hash) || views.all(), { replace: true });
}

const NOTICE_KEY = "tornchat.notice";

/** Signs out: the event queue is deleted, the key forgotten, and the page loaded afresh so that
 * nothing of this account (cached topics, drafts, messages) stays in memory for the next one. */
async function signOut(notice = "", elsewhere = false) {
  await stopEvents();
  forgetAuth(!elsewhere);
  layout = null;
  if (notice) sessionStorage.setItem(NOTICE_KEY, notice);
  location.replace(location.pathname);
}

onChange((kind) => {
  if (!layout || kind === "heartbeat") return;
  if (["subscription", "stream", "realm_user", "realm"].includes(kind)) refreshChrome();
  else renderSidebar();
  updateTitle();
});

window.addEventListener("tornchat:connection", (e) => {
  if (!layout) return;
  layout.querySelector(".connection-banner").hidden = e.detail.connected;
});

window.addEventListener("tornchat:narrow", (e) => navigate(e.detail));
window.addEventListener("tornchat:unauthorized", () => signOut("Your session has ended. Sign in again."));
onSignedOutElsewhere(() => signOut("You signed out in another tab.", true));
window.addEventListener("popstate", () => {
  const narrow = parseHash(location.hash);
  if (layout && narrow) navigate(narrow, { replace: true });
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && layout && layout.classList.contains("sidebar-open")) closeSidebarOnPhone();
});

if (loadAuth() && currentAuth()) start();
else {
  const notice = sessionStorage.getItem(NOTICE_KEY) || "";
  sessionStorage.removeItem(NOTICE_KEY);
  renderLogin(root, start, notice);
}
