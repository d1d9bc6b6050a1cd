// The address bar: #narrow/... for the current narrow, so reload and back/forward keep the place.
// Zulip's form, as the server writes it in channel and topic links (/#narrow/channel/2-general/topic/a.20b):
// a component is URI-encoded with "%" written as "." (and "." itself as ".2E"); an id may carry a "-slug".
import { views } from "./narrow.js";

function encode(text) {
  return encodeURIComponent(text).replace(/\./g, "%2E").replace(/%/g, ".");
}

function decode(component) {
  return decodeURIComponent(component.replace(/\./g, "%"));
}

export function toHash(narrow) {
  switch (narrow.kind) {
    case "starred":
      return "#narrow/is/starred";
    case "mentions":
      return "#narrow/is/mentioned";
    case "stream":
      return `#narrow/channel/${narrow.streamId}`;
    case "topic":
      return `#narrow/channel/${narrow.streamId}/topic/${encode(narrow.topic)}`;
    case "dm":
      return `#narrow/dm/${narrow.userIds.join(",")}`;
    case "search":
      return `#narrow/search/${encode(narrow.query)}`;
    default:
      return "#all";
  }
}

const CHANNEL = /^(\d+)(?:-.*)?$/;
const PEOPLE = /^([\d,]*)(?:-.*)?$/;

export function parseHash(hash) {
  const parts = hash.replace(/^#/, "").split("/");
  if (parts[0] !== "narrow") return null;
  try {
    if (parts[1] === "is" && parts[2] === "starred") return views.starred();
    if (parts[1] === "is" && parts[2] === "mentioned") return views.mentions();
    const channel = (parts[1] === "channel" || parts[1] === "stream") && CHANNEL.exec(parts[2] || "");
    if (channel) {
      const streamId = Number(channel[1]);
      // Anything after the topic (/near/<id>, /with/<id>) is not kept.
      return parts[3] === "topic" && parts[4] !== undefined ? views.topic(streamId, decode(parts[4])) : views.stream(streamId);
    }
    const people = (parts[1] === "dm" || parts[1] === "pm-with") && PEOPLE.exec(parts[2] || "");
    if (people) return views.dm(people[1].split(",").filter(Boolean).map(Number));
    if (parts[1] === "search" && parts[2] !== undefined) return views.search(decode(parts[2]));
  } catch {
    return null;
  }
  return null;
}
