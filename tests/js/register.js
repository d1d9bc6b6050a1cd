// POST /register with no parameters: zulip-js sends an empty multipart body.
'use strict';

require('./common').run(async (client) => client.queues.register({}));
