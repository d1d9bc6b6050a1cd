// Send to a channel (multipart POST), then read it back with a narrow (GET /messages).
'use strict';

require('./common').run(async (client) => {
  const channel = process.env.CHANNEL;
  const sent = await client.messages.send({
    type: 'stream', to: channel, topic: 'from zulip-js', content: 'hello from **zulip-js**',
  });
  const read = await client.messages.retrieve({
    anchor: 'newest',
    num_before: 10,
    num_after: 0,
    narrow: [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: 'from zulip-js' }],
  });
  return { sent, read };
});
