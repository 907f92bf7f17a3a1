"""Work on a data dir between batches: erased bytes out of the files (``purge``),
sessions past ``--retain-days`` (``retention``), and the index format recorded with the
dir, with the rebuild of an index of another format (``index_format``)."""

__all__ = ["index_format", "purge", "retention"]
