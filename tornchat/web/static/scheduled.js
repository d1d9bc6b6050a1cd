// "Send later": POST /scheduled_messages, and a list to edit, reschedule and cancel them.
import { api } from "./api.js";
import { onEvent } from "./events.js";
import { state, streamName, userName } from "./state.js";
import { el, formatDate, formatTime, openDialog, toast } from "./ui.js";

function pad(n) {
  return String(n).padStart(2, "0");
}

/** A datetime-local input's value for a Unix time (local time zone). */
function localValue(seconds) {
  const d = new Date(seconds * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function parseLocal(value) {
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

function defaultTime() {
  const next = Math.ceil(Date.now() / 1000 / 3600) * 3600 + 3600;
  return localValue(next);
}

/** Shows the time picker in panel; onConfirm(timestamp) schedules. */
export function schedulePicker(panel, onConfirm) {
  const input = el("input", { type: "datetime-local", "data-testid": "schedule-time", "aria-label": "Send at", value: defaultTime() });
  const confirm = el("button", { type: "button", class: "primary", "data-testid": "schedule-confirm" }, "Schedule");
  const cancel = el("button", { type: "button" }, "Cancel");
  function close() {
    panel.hidden = true;
    panel.replaceChildren();
  }
  confirm.addEventListener("click", async () => {
    const timestamp = parseLocal(input.value);
    if (timestamp === null) {
      toast("Choose a date and time.", "error");
      return;
    }
    confirm.disabled = true;
    try {
      await onConfirm(timestamp);
      close();
    } catch (err) {
      toast("Not scheduled: " + err.message, "error");
      confirm.disabled = false;
    }
  });
  cancel.addEventListener("click", close);
  panel.addEventListener("keydown", (e) => {
    if (e.key === "Escape") close();
  });
  panel.replaceChildren(el("label", {}, "Send at ", input), confirm, cancel);
  panel.hidden = false;
  input.focus();
}

/** Creates a scheduled message from POST /messages-style params. */
export async function scheduleMessage(params, timestamp) {
  await api("POST", "/scheduled_messages", { ...params, scheduled_delivery_timestamp: timestamp });
  toast(`Scheduled for ${formatDate(timestamp)} ${formatTime(timestamp)}.`, "success");
}

function describe(m) {
  if (m.type === "stream") return `#${streamName(m.to)} › ${m.topic || state.realm.realm_empty_topic_display_name}`;
  return "To " + (Array.isArray(m.to) ? m.to : [m.to]).map(userName).join(", ");
}

let refresh = null;
onEvent("scheduled_messages", () => refresh && refresh());

function item(m) {
  const when = el("div", { class: "item-title" }, describe(m), " · ", formatDate(m.scheduled_delivery_timestamp), " ", formatTime(m.scheduled_delivery_timestamp), m.failed ? " · failed" : "");
  const text = el("div", { class: "item-text" }, m.content);
  const editor = el("div", { class: "item-editor", hidden: true });
  const edit = el("button", { type: "button", "data-testid": "scheduled-edit" }, "Edit");
  const reschedule = el("button", { type: "button", "data-testid": "scheduled-reschedule" }, "Reschedule");
  const cancel = el("button", { type: "button", class: "danger", "data-testid": "scheduled-cancel" }, "Cancel message");
  const id = m.scheduled_message_id;
  edit.addEventListener("click", () => {
    const box = el("textarea", { "data-testid": "scheduled-edit-content", "aria-label": "Scheduled message text", rows: 3 });
    box.value = m.content;
    showEditor(editor, box, "scheduled-edit-save", () => ({ content: box.value }), id);
  });
  reschedule.addEventListener("click", () => {
    const input = el("input", { type: "datetime-local", "data-testid": "scheduled-time", "aria-label": "New time", value: localValue(m.scheduled_delivery_timestamp) });
    showEditor(editor, input, "scheduled-reschedule-save", () => ({ scheduled_delivery_timestamp: parseLocal(input.value) }), id);
  });
  cancel.addEventListener("click", async () => {
    try {
      await api("DELETE", `/scheduled_messages/${id}`);
    } catch (err) {
      toast("Could not cancel: " + err.message, "error");
    }
  });
  return el(
    "li", { class: "item", "data-testid": "scheduled-item", "data-scheduled-id": id },
    when, text, editor, el("div", { class: "item-buttons" }, edit, reschedule, cancel),
  );
}

function showEditor(editor, input, testid, params, id) {
  const save = el("button", { type: "button", class: "primary", "data-testid": testid }, "Save");
  const close = el("button", { type: "button" }, "Close");
  save.addEventListener("click", async () => {
    try {
      await api("PATCH", `/scheduled_messages/${id}`, params());
      editor.hidden = true;
    } catch (err) {
      toast("Could not save: " + err.message, "error");
    }
  });
  close.addEventListener("click", () => (editor.hidden = true));
  editor.replaceChildren(input, el("div", { class: "item-buttons" }, save, close));
  editor.hidden = false;
  input.focus();
}

/** The list of the user's scheduled messages. */
export function openScheduled() {
  const list = el("ul", { class: "item-list", "data-testid": "scheduled-list" });
  function draw() {
    const items = [...state.scheduled.values()].sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp);
    list.replaceChildren(...(items.length ? items.map(item) : [el("li", { class: "muted-text" }, "No scheduled messages.")]));
  }
  draw();
  refresh = draw;
  openDialog("Scheduled messages", list, { onClose: () => (refresh = null) });
}
