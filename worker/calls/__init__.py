"""A tool call from its decoding to its one reply, whatever the transport: the call
(``tool_call``), the pipeline that answers it (``pipeline``), its admission (``admission``,
``slots``, ``execution``), its cancels (``cancels``), read-your-writes
(``read_your_writes``) and the tools' limits (``limits``)."""
