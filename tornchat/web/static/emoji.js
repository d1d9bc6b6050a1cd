// Emoji: the reaction picker (popular emoji, then a filter over every name) and how a reaction looks.
import { state } from "./state.js";
import { el, emojiChar, openDialog } from "./ui.js";

const POPULAR = ["+1", "tada", "smile", "heart", "working_on_it", "octopus", "joy", "eyes", "thinking", "clap", "check", "-1"];
const MAX_SHOWN = 80;
let namesPromise = null;

/** { name: code } for every Unicode emoji name (served next to this module). */
function emojiNames() {
  if (!namesPromise) {
    namesPromise = fetch(new URL("./emoji-names.json", import.meta.url))
      .then((r) => {
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        return r.json();
      })
      .catch(() => {
        namesPromise = null; // asked again the next time the picker opens
        return {};
      });
  }
  return namesPromise;
}

/** What a reaction shows: the Unicode character, or the custom emoji's image. */
export function reactionFace(reaction) {
  if (reaction.reaction_type === "realm_emoji") {
    const emoji = [...state.realmEmoji.values()].find((e) => String(e.id) === String(reaction.emoji_code));
    if (emoji) return el("img", { class: "emoji", src: emoji.source_url, alt: `:${reaction.emoji_name}:` });
    return el("span", { class: "emoji" }, `:${reaction.emoji_name}:`);
  }
  const ch = reaction.reaction_type === "unicode_emoji" ? emojiChar(reaction.emoji_code) : null;
  return el("span", { class: "emoji", "aria-hidden": "true" }, ch || `:${reaction.emoji_name}:`);
}

function candidates(names, filter) {
  const custom = [...state.realmEmoji.values()]
    .filter((e) => !e.deactivated)
    .map((e) => ({ emoji_name: e.name, emoji_code: String(e.id), reaction_type: "realm_emoji" }));
  const unicode = Object.entries(names).map(([name, code]) => ({ emoji_name: name, emoji_code: code, reaction_type: "unicode_emoji" }));
  const query = filter.trim().toLowerCase().replace(/^:|:$/g, "");
  if (!query) {
    const popular = POPULAR.filter((n) => names[n]).map((n) => ({ emoji_name: n, emoji_code: names[n], reaction_type: "unicode_emoji" }));
    return [...popular, ...custom].slice(0, MAX_SHOWN);
  }
  const all = [...custom, ...unicode];
  const starts = all.filter((e) => e.emoji_name.startsWith(query));
  const contains = all.filter((e) => !e.emoji_name.startsWith(query) && e.emoji_name.includes(query));
  return [...starts, ...contains].slice(0, MAX_SHOWN);
}

/** Opens the picker; onPick({emoji_name, emoji_code, reaction_type}) runs for the chosen emoji. */
export async function openEmojiPicker(anchor, onPick) {
  const filter = el("input", {
    type: "search", class: "emoji-filter", "data-testid": "emoji-filter", placeholder: "Filter emoji",
    "aria-label": "Filter emoji", autocomplete: "off",
  });
  const grid = el("div", { class: "emoji-grid", role: "listbox", "aria-label": "Emoji" });
  const body = el("div", { class: "emoji-picker", "data-testid": "emoji-picker" }, filter, grid);
  const dialog = openDialog("Add a reaction", body);
  const names = await emojiNames();
  function draw() {
    const options = candidates(names, filter.value).map((emoji) =>
      el(
        "button",
        {
          type: "button", class: "emoji-option", role: "option", "data-testid": "emoji-option",
          "data-emoji-name": emoji.emoji_name, title: `:${emoji.emoji_name}:`, "aria-label": `:${emoji.emoji_name}:`,
          onclick: () => {
            dialog.close();
            onPick(emoji);
          },
        },
        reactionFace(emoji),
      ),
    );
    grid.replaceChildren(...(options.length ? options : [el("p", { class: "muted-text" }, "No emoji match.")]));
  }
  filter.addEventListener("input", draw);
  filter.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      const first = grid.querySelector(".emoji-option");
      if (first) first.click();
    }
  });
  draw();
  filter.focus();
}
