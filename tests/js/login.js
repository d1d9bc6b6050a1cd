// Password login, then the profile with the key zulip-js fetched.
'use strict';

require('./common').run(async (client) => ({
  apiKey: client.config.apiKey,
  profile: await client.users.me.getProfile(),
}));
