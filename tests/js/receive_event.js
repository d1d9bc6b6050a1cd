// Register for message events, say so on stdout, then long-poll until another user's message arrives.
'use strict';

require('./common').run(async (client) => {
  const queue = await client.queues.register({ event_types: ['message'] });
  if (queue.result !== 'success') return { queue };
  process.stdout.write(`REGISTERED ${queue.queue_id}\n`);
  let lastEventId = queue.last_event_id;
  for (let attempt = 0; attempt < 20; attempt += 1) {
    // eslint-disable-next-line no-await-in-loop
    const answer = await client.events.retrieve({ queue_id: queue.queue_id, last_event_id: lastEventId });
    if (answer.result !== 'success') return { answer };
    const messages = answer.events.filter((event) => event.type === 'message');
    if (messages.length > 0) return { events: messages };
    lastEventId = Math.max(lastEventId, ...answer.events.map((event) => event.id));
  }
  return { events: [] };
});
