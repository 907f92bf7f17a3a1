"""dsh session log files: line decoding, packed chunk rows, envelopes, discovery, reading."""

from indexer.logs.chunks import CHUNK_ROW_TAGS, expand_chunk_row, is_chunk_row
from indexer.logs.envelope import check_envelope
from indexer.logs.jsonl import iter_lines
from indexer.logs.reader import LogRejectedError, SessionLog, parse_line, read_log
from indexer.logs.roots import decode_segment, discover, implied_session_id

__all__ = [
    "CHUNK_ROW_TAGS",
    "LogRejectedError",
    "SessionLog",
    "check_envelope",
    "decode_segment",
    "discover",
    "expand_chunk_row",
    "implied_session_id",
    "is_chunk_row",
    "iter_lines",
    "parse_line",
    "read_log",
]
