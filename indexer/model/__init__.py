"""The session log model: header, events, and the event-stream record envelopes."""

from indexer.model.event import SessionEvent, dump_json
from indexer.model.header import SessionHeader, parse_header

__all__ = ["SessionEvent", "SessionHeader", "dump_json", "parse_header"]
