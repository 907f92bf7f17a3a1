"""The console's reader: a session as a conversation people read, not the model's tool
text.

* ``markdown``    message text as a CommonMark tree of allowlisted tags (no HTML parsed
                  anywhere: the page builds DOM nodes from the tree).
* ``blocks``      a page of events as transcript blocks: messages, thinking, tool calls
                  paired with their results, stream chunks merged, the rest summed up.
* ``export``      a session (and its subagents) as one Markdown document.

Every event comes from ``QueryService.read_range`` (redacted as every read is); text
joined from several events goes through ``QueryService.shown_text``. Nothing here
authorizes: the HTTP layer (``worker.transports.http.reader_api``) does, before a read.
"""
