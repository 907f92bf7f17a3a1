"""Where records come from, all applied through one record loop (``loop``): log files
once (``files``, with ``parallel`` reading them in worker processes), watched log files
(``local``), and the Kafka events topic (``kafka``); ``registry`` names the logs the
processes sharing a data dir want watched."""

__all__ = ["files", "kafka", "local", "loop", "parallel", "registry"]
