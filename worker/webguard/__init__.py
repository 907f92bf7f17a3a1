"""The rules every HTTP port of sessionq follows (``sessionq serve``'s API and console,
``sessionq mcp --transport http``, every role's ops endpoints), decided once in
``admit``: who may talk to it (the bearer token and the loopback rule, ``token``) and
which names a request may carry without a token (the DNS-rebinding rule, ``origin``)."""
