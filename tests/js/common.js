// Shared by the flow scripts: log in with zulip-js as a person would, run one flow, print its result as JSON.
// Driven by tests/clients/test_client_zulip_js.py, which passes the server and account in the environment.
'use strict';

const zulip = require('zulip-js');

async function login() {
  // A password login: zulip-js asks POST /fetch_api_key for the API key, then uses it for every call.
  return zulip({
    username: process.env.ZULIP_USERNAME,
    password: process.env.ZULIP_PASSWORD,
    realm: process.env.ZULIP_REALM,
  });
}

function run(flow) {
  login()
    .then((client) => flow(client))
    .then((result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
    })
    .catch((error) => {
      process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
      process.exit(1);
    });
}

module.exports = { run };
