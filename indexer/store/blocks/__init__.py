"""Raw events in zstd blocks per session: the block format and codec (``format``), the
``blocks`` table (``table``), blocks built straight from packed chunk rows (``packed``),
and the dir's own trained dictionaries (``dictionaries``, the shipped ``zstd.dict``)."""

__all__ = ["dictionaries", "format", "packed", "table"]
