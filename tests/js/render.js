// Markdown preview: POST /messages/render.
'use strict';

require('./common').run(async (client) => client.messages.render('**bold** and :wave: and `code`'));
