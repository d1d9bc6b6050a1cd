"""Reading messages: who may read one, narrows, the range query, message objects and encoded pages.

A page of GET /messages, from the request to the bytes (module: function, then what the step does):

  tornchat/direct_get.py: Dispatch.headers_received     a body-less GET goes to DirectGet, no RequestHandler
  tornchat/handlers/messages.py: direct_get_messages    its serve(): the credentials, then one read transaction
  storage/org/users.py: authenticate                    the user, from the directory (storage/cache/directory.py)
  tornchat/params.py: Params.parse                      the query string into message_fetch.GetMessages
  storage/fetch/message_fetch.py: get_messages          the checks in Zulip's order, the anchor
  storage/fetch/narrow_terms.py: parse_narrow         the narrow's terms, each operand checked and bounded
  storage/fetch/narrow.py: build_query                  the terms' Query: its driving scan and filters
  storage/fetch/message_fetch.py: select_range          one scan down from the anchor and one up
  storage/fetch/narrow_select.py: find_flag_rows        each scan's SQL (select_sql) and its (id, flags) rows
  storage/cache/flag_cache.py: FlagCache.of             a history-mode range's flags, kept from earlier pages
  storage/fetch/message_encoded.py: encoded_page        each message's bytes and a flags tail: `messages`
  storage/cache/message_cache.py: MessageCache.lookup   the bytes kept; message_objects.py builds those missing
  tornchat/base.py: success_body                        the envelope around the page, joined once
  tornchat/direct_get.py: DirectGet.finish              the headers and the body written, the access line logged

Beside that path: HEAD and a GET with a form body come in through MessagesHandler.get; message_ids
reads one scan (narrow_select.ids_query); first_unread and anchor=date one more (anchor_value). Search
narrows, and every page with the encoded-message cache off, read whole rows (find_message_rows), which
message_encoded.encoded_search_page or message_objects.message_tuple_objects turn into messages.
"""
