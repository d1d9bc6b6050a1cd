// Drafts kept on the server while typing (POST/PATCH/DELETE /drafts), synced between tabs by drafts events.
import { api } from "./api.js";
import { onEvent } from "./events.js";
import { state, streamName, userName } from "./state.js";
import { debounce, el, formatDate, formatTime, openDialog, toast } from "./ui.js";

let compose = null; // { conversation(), content(), setContent(text), setConversation(draft) }
let currentId = null; // the draft the compose box is writing
let lastSynced = ""; // the content last saved or restored: the box may follow the server while it holds that
let chain = Promise.resolve();

export function bindCompose(adapter) {
  compose = adapter;
}

function sameConversation(draft, conv) {
  if (!conv || draft.type !== conv.type) return false;
  if (draft.type === "stream") return draft.to[0] === conv.to[0] && draft.topic.toLowerCase() === conv.topic.toLowerCase();
  return [...draft.to].sort((a, b) => a - b).join(",") === [...conv.to].sort((a, b) => a - b).join(",");
}

function enqueue(fn) {
  chain = chain.then(fn).catch((err) => toast("Could not save the draft: " + err.message, "error"));
  return chain;
}

async function save() {
  const conv = compose.conversation();
  const content = compose.content();
  if (!conv) return;
  if (!content.trim()) {
    if (currentId !== null) {
      const id = currentId;
      currentId = null;
      lastSynced = "";
      await api("DELETE", `/drafts/${id}`).catch(() => {});
    }
    return;
  }
  const draft = { ...conv, content, timestamp: Math.floor(Date.now() / 1000) };
  lastSynced = content;
  if (currentId !== null) {
    try {
      await api("PATCH", `/drafts/${currentId}`, { draft });
      return;
    } catch (err) {
      if (err.status !== 404 && err.code !== "BAD_REQUEST") throw err;
    }
  }
  const data = await api("POST", "/drafts", { drafts: [draft] });
  currentId = data.ids[0];
}

const saveSoon = debounce(() => enqueue(save), 700);

/** Called on every keystroke of the compose box. */
export function draftChanged() {
  saveSoon();
}

/** The message was sent or scheduled: its draft goes. */
export function discardDraft() {
  saveSoon.cancel();
  enqueue(async () => {
    if (currentId === null) return;
    const id = currentId;
    currentId = null;
    lastSynced = "";
    await api("DELETE", `/drafts/${id}`).catch(() => {});
  });
}

/** The compose box moved to another conversation: restore that conversation's draft into an empty box. */
export function conversationChanged() {
  saveSoon.cancel();
  if (compose.content().trim()) {
    saveSoon();
    return;
  }
  currentId = null;
  lastSynced = "";
  restoreMatching();
}

function restoreMatching() {
  const conv = compose.conversation();
  const box = compose.content();
  if (box !== "" && box !== lastSynced) return;
  const current = currentId !== null ? state.drafts.get(currentId) : null;
  // A channel chosen with no topic yet takes up that channel's newest draft, topic included.
  const openTopic = conv && conv.type === "stream" && conv.topic === "";
  const fits = (d) => sameConversation(d, conv) || (openTopic && d.type === "stream" && d.to[0] === conv.to[0]);
  const draft = current && fits(current)
    ? current
    : [...state.drafts.values()].filter(fits).sort((a, b) => b.timestamp - a.timestamp)[0];
  if (!draft) {
    if (currentId !== null && !state.drafts.has(currentId) && box === lastSynced) {
      currentId = null;
      lastSynced = "";
      compose.setContent("");
    }
    return;
  }
  if (draft.content === box) {
    currentId = draft.id;
    return;
  }
  currentId = draft.id;
  lastSynced = draft.content;
  if (openTopic && draft.topic) compose.setTopic(draft.topic);
  compose.setContent(draft.content);
}

onEvent("drafts", () => {
  if (compose) restoreMatching();
  if (listRefresh) listRefresh();
});

function describe(draft) {
  if (draft.type === "stream") return `#${streamName(draft.to[0])} › ${draft.topic || state.realm.realm_empty_topic_display_name}`;
  if (draft.type === "private") return "To " + draft.to.map(userName).join(", ");
  return "No recipient";
}

let listRefresh = null;

/** The drafts dialog: restore a draft into the compose box, or delete it. */
export function openDrafts() {
  const list = el("ul", { class: "item-list", "data-testid": "drafts-list" });
  function draw() {
    const drafts = [...state.drafts.values()].sort((a, b) => b.timestamp - a.timestamp);
    list.replaceChildren(
      ...(drafts.length ? drafts.map(item) : [el("li", { class: "muted-text" }, "No drafts.")]),
    );
  }
  function item(draft) {
    const restore = el("button", { type: "button", "data-testid": "draft-restore" }, "Restore");
    const remove = el("button", { type: "button", class: "danger", "data-testid": "draft-delete" }, "Delete");
    restore.addEventListener("click", () => {
      compose.setConversation(draft);
      currentId = draft.id;
      lastSynced = draft.content;
      compose.setContent(draft.content);
      dialog.close();
      compose.focus();
    });
    remove.addEventListener("click", () =>
      api("DELETE", `/drafts/${draft.id}`).catch((err) => toast("Could not delete the draft: " + err.message, "error")),
    );
    return el(
      "li",
      { class: "item", "data-testid": "draft-item", "data-draft-id": draft.id },
      el("div", { class: "item-title" }, describe(draft), " · ", formatDate(draft.timestamp), " ", formatTime(draft.timestamp)),
      el("div", { class: "item-text" }, draft.content),
      el("div", { class: "item-buttons" }, restore, remove),
    );
  }
  draw();
  listRefresh = draw;
  const dialog = openDialog("Drafts", list, { onClose: () => (listRefresh = null) });
}
