"""``sessionq mcp``: the five tools behind the official MCP Python SDK (stdio and
Streamable HTTP), over the embedded store or a Kafka cluster.

``server`` builds the MCP server from the manifest (one source for names, descriptions
and schemas), ``binding`` binds each connection to one caller session, ``backends``
runs a call through the ``Pipeline`` (embedded) or the host client (Kafka), ``http``
puts the Streamable HTTP app behind the bearer-token rule of ``sessionq serve``.
"""
