"""The one HTTP stack of every port sessionq opens (``serve``'s API and console, ``mcp
--transport http``, every role's ops endpoints): the ASGI guard, route table and JSON
writer (``asgi``), the uvicorn server (``server``) and its bound on request heads
(``heads``). The rules the guard applies are ``worker.webguard``'s."""
