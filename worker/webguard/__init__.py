"""The rules every local HTTP port of sessionq follows, whichever front end serves it
(``sessionq serve``'s API, ``sessionq mcp --transport http``): who may talk to it (the
bearer token and the loopback rule, ``token``) and which names a request may carry
without a token (the DNS-rebinding rule, ``origin``)."""
