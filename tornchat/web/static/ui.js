// Small DOM helpers: elements without innerHTML, modal dialogs, toasts.

/**
 * el("button", { class: "x", dataset: { id: 1 }, onclick: fn, "data-testid": "t" }, "text", child)
 * Strings become text nodes; null/false children are skipped; arrays are flattened.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "value") node.value = value;
    else if (key === "checked" || key === "disabled" || key === "selected") node[key] = Boolean(value);
    else if (key === "style") throw new Error("inline styles are not allowed (CSP): use a class");
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  appendChildren(node, children);
  return node;
}

function appendChildren(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) appendChildren(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

let openCount = 0;

/** Opens a modal dialog; focus stays inside, Esc or the close button closes it. Returns { close, dialog }. */
export function openDialog(title, bodyElement, options = {}) {
  const previous = document.activeElement;
  const titleId = `dialog-title-${++openCount}`;
  const closeButton = el("button", { type: "button", class: "dialog-close", "aria-label": "Close" }, "×");
  const dialog = el(
    "div",
    { class: "dialog", role: "dialog", "aria-modal": "true", "aria-labelledby": titleId, tabindex: "-1" },
    el("div", { class: "dialog-header" }, el("h2", { id: titleId }, title), closeButton),
    el("div", { class: "dialog-body" }, bodyElement),
  );
  if (options.testid) dialog.setAttribute("data-testid", options.testid);
  const backdrop = el("div", { class: "dialog-backdrop" }, dialog);
  let closed = false;
  function close() {
    if (closed) return;
    closed = true;
    backdrop.remove();
    document.removeEventListener("keydown", onKey, true);
    if (options.onClose) options.onClose();
    if (previous && typeof previous.focus === "function" && document.contains(previous)) previous.focus();
  }
  function onKey(event) {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Tab") {
      trapTab(dialog, event);
    }
  }
  closeButton.addEventListener("click", close);
  backdrop.addEventListener("mousedown", (event) => {
    if (event.target === backdrop) close();
  });
  document.addEventListener("keydown", onKey, true);
  document.body.appendChild(backdrop);
  const first = bodyElement.querySelector && bodyElement.querySelector(FOCUSABLE);
  (first || dialog).focus();
  return { close, dialog };
}

function trapTab(container, event) {
  const items = [...container.querySelectorAll(FOCUSABLE)].filter((n) => n.offsetParent !== null);
  if (!items.length) return;
  const first = items[0];
  const last = items[items.length - 1];
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  } else if (!container.contains(document.activeElement)) {
    event.preventDefault();
    first.focus();
  }
}

let toastBox = null;

/** Shows a short message at the bottom of the page (kind: info | error | success). */
export function toast(message, kind = "info") {
  if (!toastBox || !document.contains(toastBox)) {
    toastBox = el("div", { class: "toasts", role: "status", "aria-live": "polite" });
    document.body.appendChild(toastBox);
  }
  const item = el("div", { class: `toast toast-${kind}`, "data-testid": "toast" }, message);
  toastBox.appendChild(item);
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 4000);
  return item;
}

export function formatTime(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

export function formatDate(seconds) {
  return new Date(seconds * 1000).toLocaleDateString([], {
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
  });
}

export function initials(name) {
  const parts = String(name || "?").trim().split(/\s+/).filter(Boolean);
  const letters = parts.length > 1 ? parts[0][0] + parts[parts.length - 1][0] : (parts[0] || "?").slice(0, 2);
  return letters.toUpperCase();
}

/** The character(s) for an emoji code such as "1f44d" or "1f468-200d-1f4bb"; null when not unicode. */
export function emojiChar(code) {
  try {
    return String.fromCodePoint(...String(code).split("-").map((part) => parseInt(part, 16)));
  } catch {
    return null;
  }
}

export function debounce(fn, ms) {
  let timer = null;
  const wrapped = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  wrapped.flush = (...args) => {
    clearTimeout(timer);
    fn(...args);
  };
  wrapped.cancel = () => clearTimeout(timer);
  return wrapped;
}
