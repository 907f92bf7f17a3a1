"""Worked examples of SPEC §10 shared by the renderer tests and the end-to-end tool
tests (one copy of each expected text)."""

# SPEC §10.5: session_event_read of sess-b seq 5, before 2, after 1.
EVENT_READ_SESS_B_5 = """\
Session sess-b — Fix flaky parser
Target event seq 5:
```json
{
  "type": "user/message",
  "seq": 5,
  "time": 1784851235000,
  "data": {
    "content": [
      {
        "type": "text",
        "text": "Check tokenizer.ts"
      }
    ],
    "source": {
      "kind": "user"
    },
    "role": "user",
    "id": "msg-5"
  },
  "surfaceOp": "append"
}
```

Before:
- seq 3 | user/message | 2026-07-24T00:00:20.000Z
  original question about the parser
- seq 4 | assistant/message | 2026-07-24T00:00:30.000Z
  summary one
  second line

After:
- seq 6 | step/end | 2026-07-24T00:00:36.000Z | (no semantic text)"""
