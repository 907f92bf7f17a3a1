"""The record path: ``Store`` applies records and commits batches (``store``), the writer
turns a validated record into rows and index documents (``writer``, ``plan``), and the
commit protocol keeps Tantivy, SQLite and the consumed offsets in step (``checkpoint``)."""

__all__ = ["checkpoint", "plan", "store", "writer"]
