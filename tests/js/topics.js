// The topics of a channel: GET /get_stream_id, then GET /users/me/{stream_id}/topics.
'use strict';

require('./common').run(async (client) => {
  const found = await client.streams.getStreamId(process.env.CHANNEL);
  if (found.result !== 'success') return { found };
  return client.streams.topics.retrieve({ stream_id: found.stream_id });
});
