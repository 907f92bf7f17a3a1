"""The ways a call reaches the pipeline: Kafka (``kafka``: the workers' consumer group and
the partitioned node), HTTP (``http``: ``sessionq serve``'s API and console) and MCP
(``mcp``: stdio and Streamable HTTP). A transport turns bytes into a call and a reply
back into bytes; every decision is the pipeline's (``worker.calls``)."""
