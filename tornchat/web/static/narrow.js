// Narrows: what the message list shows, as the API's narrow operators and as a client-side filter.
import { dmKey, state, streamName, userName } from "./state.js";

export const views = {
  all: () => ({ kind: "all" }),
  starred: () => ({ kind: "starred" }),
  mentions: () => ({ kind: "mentions" }),
  stream: (streamId) => ({ kind: "stream", streamId }),
  topic: (streamId, topic) => ({ kind: "topic", streamId, topic }),
  dm: (userIds) => ({ kind: "dm", userIds: dmKey(userIds).split(",").filter(Boolean).map(Number) }),
  search: (query) => ({ kind: "search", query }),
};

/** The narrow as GET /messages's `narrow` parameter. */
export function operators(narrow) {
  switch (narrow.kind) {
    case "starred":
      return [{ operator: "is", operand: "starred" }];
    case "mentions":
      return [{ operator: "is", operand: "mentioned" }];
    case "stream":
      return [{ operator: "channel", operand: narrow.streamId }];
    case "topic":
      return [
        { operator: "channel", operand: narrow.streamId },
        { operator: "topic", operand: narrow.topic },
      ];
    case "dm":
      return [{ operator: "dm", operand: narrow.userIds.length ? narrow.userIds : [state.me.user_id] }];
    case "search":
      return [{ operator: "search", operand: narrow.query }];
    default:
      // The combined feed leaves out muted channels, as Zulip's does.
      return [{ operator: "in", operand: "home" }];
  }
}

export function title(narrow) {
  switch (narrow.kind) {
    case "starred":
      return "Starred messages";
    case "mentions":
      return "Mentions";
    case "stream":
      return "#" + streamName(narrow.streamId);
    case "topic":
      return `#${streamName(narrow.streamId)} › ${narrow.topic || state.realm.realm_empty_topic_display_name}`;
    case "dm":
      return narrow.userIds.length ? "Direct messages with " + narrow.userIds.map(userName).join(", ") : "Notes to self";
    case "search":
      return `Search: ${narrow.query}`;
    default:
      return "All messages";
  }
}

function recipientIds(message) {
  if (message.type !== "private") return [];
  return message.display_recipient.map((r) => r.id);
}

/** Whether a live message belongs in the narrow (search narrows take no live messages). */
export function matches(narrow, message, flags = message.flags || []) {
  switch (narrow.kind) {
    case "all": {
      const sub = message.type === "stream" ? state.subscriptions.get(message.stream_id) : null;
      return !(sub && sub.is_muted);
    }
    case "starred":
      return flags.includes("starred");
    case "mentions":
      return flags.some((f) => f === "mentioned" || f === "wildcard_mentioned" || f === "stream_wildcard_mentioned");
    case "stream":
      return message.type === "stream" && message.stream_id === narrow.streamId;
    case "topic":
      return (
        message.type === "stream" &&
        message.stream_id === narrow.streamId &&
        message.subject.toLowerCase() === narrow.topic.toLowerCase()
      );
    case "dm":
      return message.type === "private" && dmKey(recipientIds(message)) === narrow.userIds.join(",");
    default:
      return false;
  }
}

export function sameNarrow(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
