"""sessionq worker: the five model-facing session-query tools and their transports."""
