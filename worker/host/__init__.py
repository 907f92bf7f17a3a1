"""The host side of the Kafka protocol, for agent hosts written in Python and for the CLI:
the client that publishes sessions and calls the tools (``client``, ``publisher``), the
topics it creates (``topics``) and the checks it makes before the workers would refuse a
caller (``preflight``)."""
