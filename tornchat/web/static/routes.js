// The address bar: #narrow/... for the current narrow, so reload and back/forward keep the place.
import { views } from "./narrow.js";

export function toHash(narrow) {
  switch (narrow.kind) {
    case "starred":
      return "#narrow/is/starred";
    case "mentions":
      return "#narrow/is/mentioned";
    case "stream":
      return `#narrow/channel/${narrow.streamId}`;
    case "topic":
      return `#narrow/channel/${narrow.streamId}/topic/${encodeURIComponent(narrow.topic)}`;
    case "dm":
      return `#narrow/dm/${narrow.userIds.join(",")}`;
    case "search":
      return `#narrow/search/${encodeURIComponent(narrow.query)}`;
    default:
      return "#all";
  }
}

export function parseHash(hash) {
  const parts = hash.replace(/^#/, "").split("/");
  if (parts[0] !== "narrow") return null;
  try {
    if (parts[1] === "is" && parts[2] === "starred") return views.starred();
    if (parts[1] === "is" && parts[2] === "mentioned") return views.mentions();
    if (parts[1] === "channel" && /^\d+$/.test(parts[2])) {
      const streamId = Number(parts[2]);
      return parts[3] === "topic" ? views.topic(streamId, decodeURIComponent(parts.slice(4).join("/"))) : views.stream(streamId);
    }
    if (parts[1] === "dm") return views.dm((parts[2] || "").split(",").filter(Boolean).map(Number));
    if (parts[1] === "search") return views.search(decodeURIComponent(parts.slice(2).join("/")));
  } catch {
    return null;
  }
  return null;
}
