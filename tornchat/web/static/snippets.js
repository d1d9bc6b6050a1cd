// Saved snippets: GET /saved_snippets to pick one into the compose box, POST to save a new one.
import { api } from "./api.js";
import { state } from "./state.js";
import { el, openDialog, toast } from "./ui.js";

/** Opens the snippets dialog; insert(text) puts the chosen snippet into the compose box. */
export async function openSnippets(insert) {
  const list = el("ul", { class: "item-list", "data-testid": "snippet-list" });
  const title = el("input", { type: "text", "data-testid": "snippet-title", "aria-label": "Snippet title", placeholder: "Title", maxlength: 60 });
  const content = el("textarea", { "data-testid": "snippet-content", "aria-label": "Snippet text", placeholder: "Text", rows: 3 });
  const create = el("button", { type: "submit", class: "primary", "data-testid": "snippet-new" }, "Save snippet");
  const form = el("form", { class: "snippet-form" }, el("h3", {}, "New snippet"), title, content, create);
  const dialog = openDialog("Saved snippets", el("div", {}, list, form));
  function draw() {
    const snippets = [...state.snippets.values()].sort((a, b) => a.title.localeCompare(b.title));
    list.replaceChildren(
      ...(snippets.length
        ? snippets.map((s) => {
            const use = el("button", { type: "button", class: "snippet-item", "data-testid": "snippet-item", "data-snippet-id": s.id },
              el("strong", {}, s.title), el("span", { class: "item-text" }, s.content));
            use.addEventListener("click", () => {
              dialog.close();
              insert(s.content);
            });
            const remove = el("button", { type: "button", class: "danger", "data-testid": "snippet-delete", "aria-label": `Delete snippet ${s.title}` }, "Delete");
            remove.addEventListener("click", async () => {
              try {
                await api("DELETE", `/saved_snippets/${s.id}`);
                state.snippets.delete(s.id);
                draw();
              } catch (err) {
                toast("Could not delete: " + err.message, "error");
              }
            });
            return el("li", { class: "item item-row" }, use, remove);
          })
        : [el("li", { class: "muted-text" }, "No saved snippets yet.")]),
    );
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const data = await api("POST", "/saved_snippets", { title: title.value, content: content.value });
      state.snippets.set(data.saved_snippet_id, { id: data.saved_snippet_id, title: title.value, content: content.value });
      title.value = content.value = "";
      draw();
    } catch (err) {
      toast("Could not save the snippet: " + err.message, "error");
    }
  });
  draw();
  try {
    const data = await api("GET", "/saved_snippets");
    state.snippets = new Map(data.saved_snippets.map((s) => [s.id, s]));
    draw();
  } catch (err) {
    toast("Could not load snippets: " + err.message, "error");
  }
}
