"""Reading dsh log files: lines, zstd frames, chunk rows, envelopes, discovery, the corpus."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard

from indexer.errors import LogValidationError
from indexer.logs import (
    CHUNK_ROW_TAGS,
    LogRejectedError,
    SessionLog,
    check_envelope,
    decode_segment,
    discover,
    expand_chunk_row,
    implied_session_id,
    is_chunk_row,
    iter_lines,
    read_log,
)
from indexer.surface.fold import classify
from indexer.surface.text import extract_text
from indexer.surface.titles import fold_title
from tests.data_paths import CORPUS_DIR as CORPUS

HEADER = {"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0}


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def jsonl(*objs: Any) -> bytes:
    return b"".join(dumps(o) + b"\n" for o in objs)


def user(seq: int, text: str = "hi", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "type": "user/message",
        "seq": seq,
        "time": 10 + seq,
        "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"},
                 "role": "user", "id": f"m{seq}"},
    }
    obj.update(extra)
    obj.setdefault("surfaceOp", "append")
    return obj


def write(tmp_path: Path, data: bytes, name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def rejection(path: Path) -> LogRejectedError:
    with pytest.raises(LogRejectedError) as info:
        read_log(path)
    return info.value


# ---- packed chunk rows ---------------------------------------------------------------------------
def test_text_row_expands_to_exact_events() -> None:
    row = {
        "type": "text-chunks",
        "seq0": 5,
        "time0": 100,
        "data": {"turn": 1, "step": 2, "index": 0, "dt": [3, -1], "texts": ["He", "llo", ""]},
    }
    expanded = expand_chunk_row(row)
    assert b"\n".join(dumps(e) for e in expanded) == (
        b'{"type":"assistant/chunk","seq":5,"time":100,"data":{"turn":1,"step":2,'
        b'"chunk":{"type":"text-delta","index":0,"text":"He"}}}\n'
        b'{"type":"assistant/chunk","seq":6,"time":103,"data":{"turn":1,"step":2,'
        b'"chunk":{"type":"text-delta","index":0,"text":"llo"}}}\n'
        b'{"type":"assistant/chunk","seq":7,"time":102,"data":{"turn":1,"step":2,'
        b'"chunk":{"type":"text-delta","index":0,"text":""}}}'
    )


def test_reasoning_row_uses_reasoning_deltas() -> None:
    row = {
        "type": "reasoning-chunks",
        "seq0": 0,
        "time0": -5,
        "data": {"turn": 1, "step": 1, "index": 2, "dt": [], "texts": ["think"]},
    }
    assert expand_chunk_row(row) == [
        {
            "type": "assistant/chunk",
            "seq": 0,
            "time": -5,
            "data": {"turn": 1, "step": 1,
                     "chunk": {"type": "reasoning-delta", "index": 2, "text": "think"}},
        }
    ]


def test_tool_call_row_repeats_id_and_name_on_every_member() -> None:
    row = {
        "type": "tool-call-chunks",
        "seq0": 9,
        "time0": 50,
        "data": {"turn": 1, "step": 1, "index": 1, "dt": [0, 2], "id": "call_1", "name": "bash",
                 "args": ['{"c', 'md":', '"ls"}']},
    }
    expanded = expand_chunk_row(row)
    assert [dumps(e["data"]["chunk"]) for e in expanded] == [
        b'{"type":"tool-call-delta","index":1,"id":"call_1","name":"bash","argumentsDelta":"{\\"c"}',
        b'{"type":"tool-call-delta","index":1,"id":"call_1","name":"bash","argumentsDelta":"md\\":"}',
        b'{"type":"tool-call-delta","index":1,"id":"call_1","name":"bash",'
        b'"argumentsDelta":"\\"ls\\"}"}',
    ]
    assert [(e["seq"], e["time"]) for e in expanded] == [(9, 50), (10, 50), (11, 52)]


def test_tool_call_row_without_name_has_no_name_key() -> None:
    row = {
        "type": "tool-call-chunks",
        "seq0": 0,
        "time0": 0,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1], "id": "c", "args": ["a", "b"]},
    }
    assert [list(e["data"]["chunk"]) for e in expand_chunk_row(row)] == [
        ["type", "index", "id", "argumentsDelta"]
    ] * 2


def test_integral_float_envelope_numbers_expand_to_ints() -> None:
    row = {"type": "text-chunks", "seq0": 2.0, "time0": 7.0,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": [1.0], "texts": ["a", "b"]}}
    assert [(e["seq"], e["time"]) for e in expand_chunk_row(row)] == [(2, 7), (3, 8)]
    assert all(isinstance(e["seq"], int) and isinstance(e["time"], int)
               for e in expand_chunk_row(row))


def text_row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": "text-chunks",
        "seq0": 0,
        "time0": 0,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]},
    }
    data = changes.pop("data", {})
    row.update(changes)
    row["data"] = {**row["data"], **data}
    return row


MAX = 9007199254740991


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ({**text_row(), "extra": 1}, "envelope must be exactly {type, seq0, time0, data}"),
        ({"type": "text-chunks", "seq0": 0, "time0": 0},
         "envelope must be exactly {type, seq0, time0, data}"),
        (text_row(seq0=-1), "seq0 must be a non-negative safe integer"),
        (text_row(seq0=True), "seq0 must be a non-negative safe integer"),
        (text_row(seq0=0.5), "seq0 must be a non-negative safe integer"),
        (text_row(time0="0"), "time0 must be a safe integer"),
        (text_row(time0=MAX + 1), "time0 must be a safe integer"),
        ({**text_row(), "data": None}, "data must be an object"),
        ({**text_row(), "data": "x"}, "data must be an object"),
        ({**text_row(), "data": []}, "data must be exactly {turn, step, index, dt, texts}"),
        (text_row(data={"extra": 1}), "data must be exactly {turn, step, index, dt, texts}"),
        (text_row(data={"turn": "1"}), "turn/step/index must be numbers"),
        (text_row(data={"index": None}), "turn/step/index must be numbers"),
        (text_row(data={"step": False}), "turn/step/index must be numbers"),
        (text_row(data={"texts": []}), "texts must be a non-empty string array"),
        (text_row(data={"texts": ["a", 1, "c"]}), "texts must be a non-empty string array"),
        (text_row(data={"texts": "abc"}), "texts must be a non-empty string array"),
        (text_row(data={"dt": [1, 0.5]}), "dt must be an array of safe integers"),
        (text_row(data={"dt": None}), "dt must be an array of safe integers"),
        (text_row(data={"dt": [1]}), "dt length 1 does not match 3 members"),
        (text_row(seq0=MAX - 1), "member seqs must stay safe integers"),
        (text_row(time0=MAX - 1), "member times must stay safe integers"),
        (text_row(time0=-MAX, data={"dt": [-1, 0]}), "member times must stay safe integers"),
    ],
)
def test_malformed_text_rows(row: dict[str, Any], why: str) -> None:
    with pytest.raises(LogValidationError) as info:
        expand_chunk_row(row)
    assert info.value.message == f"malformed text-chunks storage row: {why}"


def tool_row(**data: Any) -> dict[str, Any]:
    base = {"turn": 1, "step": 1, "index": 0, "dt": [0], "id": "c", "name": "n", "args": ["a", "b"]}
    base.update(data)
    return {"type": "tool-call-chunks", "seq0": 0, "time0": 0,
            "data": {k: v for k, v in base.items() if v is not ...}}


@pytest.mark.parametrize(
    ("row", "why"),
    [
        (tool_row(extra=1), "data must be exactly {turn, step, index, id, name?, dt, args}"),
        (tool_row(id=...), "data must be exactly {turn, step, index, id, name?, dt, args}"),
        (tool_row(id=1), "id (and name when present) must be strings"),
        (tool_row(name=None), "id (and name when present) must be strings"),
        (tool_row(args=[]), "args must be a non-empty string array"),
        (tool_row(dt=[0, 0]), "dt length 2 does not match 2 members"),
    ],
)
def test_malformed_tool_call_rows(row: dict[str, Any], why: str) -> None:
    with pytest.raises(LogValidationError) as info:
        expand_chunk_row(row)
    assert info.value.message == f"malformed tool-call-chunks storage row: {why}"


def test_chunk_row_tags() -> None:
    assert frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"}) == CHUNK_ROW_TAGS
    assert is_chunk_row({"type": "text-chunks"})
    assert not is_chunk_row({"type": "assistant/chunk"})
    assert not is_chunk_row(["text-chunks"])
    assert not is_chunk_row({"type": ["text-chunks"]})


# ---- envelopes -----------------------------------------------------------------------------------
PREFIX = "seed event at index 4 has an invalid event envelope"


def test_valid_envelope_keeps_the_object_and_its_key_order() -> None:
    obj = {"type": "x/y", "seq": 4, "time": -3, "data": None, "ignorable": True}
    event = check_envelope(obj, 4)
    assert (event.type, event.seq, event.time, event.obj) == ("x/y", 4, -3, obj)
    assert event.obj is obj
    assert event.raw == b'{"type":"x/y","seq":4,"time":-3,"data":null,"ignorable":true}'


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        ([], "not a JSON object"),
        ("event", "not a JSON object"),
        ({"type": "a", "seq": 4, "time": 0, "data": {}, "extra": 1}, 'unknown key "extra"'),
        ({"seq": 4, "time": 0, "data": {}}, "type must be a string"),
        ({"type": 1, "seq": 4, "time": 0, "data": {}}, "type must be a string"),
        ({"type": "a", "time": 0, "data": {}}, "seq must be a non-negative safe integer"),
        ({"type": "a", "seq": -1, "time": 0, "data": {}},
         "seq must be a non-negative safe integer"),
        ({"type": "a", "seq": True, "time": 0, "data": {}},
         "seq must be a non-negative safe integer"),
        ({"type": "a", "seq": 4.5, "time": 0, "data": {}},
         "seq must be a non-negative safe integer"),
        ({"type": "a", "seq": 4, "data": {}}, "time must be a safe integer"),
        ({"type": "a", "seq": 4, "time": MAX + 1, "data": {}}, "time must be a safe integer"),
        ({"type": "a", "seq": 4, "time": "1", "data": {}}, "time must be a safe integer"),
        ({"type": "a", "seq": 4, "time": 0}, "data is missing"),
        ({"type": "a", "seq": 4, "time": 0, "data": {}, "ignorable": False},
         "ignorable must be true when present"),
        ({"type": "a", "seq": 4, "time": 0, "data": {}, "ignorable": 1},
         "ignorable must be true when present"),
        ({"type": "a", "seq": 4, "time": 0, "data": {}, "ignorable": None},
         "ignorable must be true when present"),
    ],
)
def test_invalid_envelopes(obj: Any, why: str) -> None:
    with pytest.raises(LogValidationError) as info:
        check_envelope(obj, 4)
    assert info.value.message == f"{PREFIX}: {why}"
    assert info.value.message.startswith(PREFIX)


def test_surface_keys_are_envelope_keys() -> None:
    obj = {"type": "user/message", "seq": 0, "time": 0, "data": {}, "sourceEventSeqs": [1],
           "surfaceOp": "x"}
    assert check_envelope(obj, 0).obj is obj


# ---- lines and zstd frames -----------------------------------------------------------------------
def zstd_frames(*parts: bytes) -> bytes:
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(p) for p in parts)


def test_plain_lines_drop_only_trailing_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n\n{"b":2}\r\n{"c":3}\n\n  \n')
    assert list(iter_lines(path)) == [
        (1, b'{"a":1}'), (2, b""), (3, b'{"b":2}\r'), (4, b'{"c":3}')
    ]


def test_final_line_without_newline_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, b'{"a":1}\n{"b":2}')
    assert list(iter_lines(path)) == [(1, b'{"a":1}'), (2, b'{"b":2}')]


def test_zstd_file_of_several_frames_reads_like_the_plain_file(tmp_path: Path) -> None:
    text = jsonl(HEADER, user(0), user(1, "two"), user(2, "three"))
    header_end = text.index(b"\n") + 1
    second = text.index(b"\n", header_end) + 1
    plain = write(tmp_path, text, "plain.jsonl")
    # Header frame, one frame per batch, one empty frame, and a frame cut mid-line.
    packed = zstd_frames(text[:header_end], text[header_end:second], b"",
                         text[second:second + 7], text[second + 7:])
    compressed = write(tmp_path, packed, "session.jsonl.zstd")
    assert list(iter_lines(compressed)) == list(iter_lines(plain))
    assert len(list(iter_lines(compressed))) == 4
    assert [e.raw for e in read_log(compressed).events] == [e.raw for e in read_log(plain).events]


def test_zstd_detection_is_by_content_not_name(tmp_path: Path) -> None:
    path = write(tmp_path, zstd_frames(jsonl(HEADER, user(0))), "oddly-named.jsonl")
    assert [e.seq for e in read_log(path).events] == [0]


def test_torn_zstd_frame_is_rejected(tmp_path: Path) -> None:
    data = zstd_frames(jsonl(HEADER), jsonl(user(0), user(1)) * 1)
    path = write(tmp_path, data[:-5], "session.jsonl.zstd")
    error = rejection(path)
    assert error.rule == "zstd data ends inside a frame (torn write)"


def test_corrupt_zstd_data_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, zstd_frames(jsonl(HEADER)) + b"\x00garbage", "session.jsonl.zstd")
    error = rejection(path)
    assert error.rule.startswith("corrupt zstd data: ")
    assert error.line == 2


# ---- read_log ------------------------------------------------------------------------------------
def test_read_log_keeps_key_order_and_raw(tmp_path: Path) -> None:
    event = {"time": 5, "type": "x/y", "data": {"b": 1, "a": [True, None, 1.5]}, "seq": 0}
    path = write(tmp_path, jsonl(HEADER, event))
    log = read_log(path)
    assert isinstance(log, SessionLog)
    assert log.path == path
    assert log.header.id == "s1"
    assert list(log.events[0].obj) == ["time", "type", "data", "seq"]
    assert log.events[0].raw == (
        b'{"time":5,"type":"x/y","data":{"b":1,"a":[true,null,1.5]},"seq":0}'
    )


def test_read_log_expands_rows_between_events(tmp_path: Path) -> None:
    row = {"type": "reasoning-chunks", "seq0": 1, "time0": 20,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b", "c"]}}
    path = write(tmp_path, jsonl(HEADER, user(0), row, user(4)))
    log = read_log(path)
    assert [(e.seq, e.type) for e in log.events] == [
        (0, "user/message"), (1, "assistant/chunk"), (2, "assistant/chunk"),
        (3, "assistant/chunk"), (4, "user/message"),
    ]
    assert [e.time for e in log.events[1:4]] == [20, 21, 22]


def test_header_without_version_reads_as_version_zero(tmp_path: Path) -> None:
    header = {"type": "session", "id": "s1", "createdAt": 1}
    assert read_log(write(tmp_path, jsonl(header))).header.version == 0


def test_huge_integers_read_as_javascript_doubles(tmp_path: Path) -> None:
    line = b'{"type":"x/y","seq":0,"time":1,"data":{"n":123456789012345678901234567890}}'
    log = read_log(write(tmp_path, jsonl(HEADER) + line + b"\n"))
    assert log.events[0].data == {"n": 1.2345678901234568e29}


def test_lone_surrogates_fall_back_to_the_stdlib_decoder(tmp_path: Path) -> None:
    line = b'{"type":"x/y","seq":0,"time":1,"data":{"s":"\\ud800x"}}'
    log = read_log(write(tmp_path, jsonl(HEADER) + line + b"\n"))
    assert log.events[0].data == {"s": "\ud800x"}
    assert json.loads(log.events[0].raw) == {"type": "x/y", "seq": 0, "time": 1,
                                             "data": {"s": "\ud800x"}}


def test_a_row_splitting_a_surrogate_pair_reads_back(tmp_path: Path) -> None:
    row = b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,' \
          b'"dt":[0,0],"texts":["a","\\ud83d","\\ude00"]}}'
    log = read_log(write(tmp_path, jsonl(HEADER) + row + b"\n"))
    texts = [json.loads(e.raw)["data"]["chunk"]["text"] for e in log.events]
    assert texts == ["a", "\ud83d", "\ude00"]


@pytest.mark.parametrize(
    ("lines", "line", "rule"),
    [
        ([], 1, "empty or header-less session log"),
        ([b"\n"], 1, "empty or header-less session log"),
        ([b"not json"], 1, None),
        ([dumps({**HEADER, "version": 1})], 1, "session header version must be 0, got 1"),
        ([dumps(user(0))], 1, 'session header has unknown key "seq"'),
        ([dumps(HEADER), dumps(user(0)), b"{oops"], 3, None),
        ([dumps(HEADER), dumps(user(0)), b'{"x":NaN}'], 3, None),
        ([dumps(HEADER), dumps(user(0)), b'{"x":1e400}'], 3, None),
        ([dumps(HEADER), dumps(user(0)), b'{"x":-Infinity}'], 3, None),
        ([dumps(HEADER), b"", dumps(user(0))], 2, "blank line inside the log"),
        ([b" ", dumps(HEADER)], 1, "blank line inside the log"),
        ([dumps(HEADER), dumps(user(0)), dumps({"type": "x/y", "seq": 1, "time": 0})], 3,
         "seed event at index 1 has an invalid event envelope: data is missing"),
        ([dumps(HEADER), dumps(user(1))], 2, "session event seq 1 is not contiguous; expected 0"),
        ([dumps(HEADER), dumps({"type": ["text-chunks"], "seq": 0, "time": 0, "data": {}})], 2,
         "seed event at index 0 has an invalid event envelope: type must be a string"),
        ([dumps(HEADER), b"[1]"], 2,
         "seed event at index 0 has an invalid event envelope: not a JSON object"),
        ([dumps(HEADER), dumps(user(0)), dumps(text_row(seq0=2))], 3,
         "session event seq 2 is not contiguous; expected 1"),
        ([dumps(HEADER), dumps(text_row(data={"dt": []}))], 2,
         "malformed text-chunks storage row: dt length 0 does not match 3 members"),
        ([dumps(HEADER), dumps(user(0)), dumps(user(1, sourceEventSeqs=[0, 0]))], 3,
         "sourceEventSeqs must not contain duplicates"),
        ([dumps(HEADER), dumps({"type": "turn/start", "seq": 0, "time": 0, "data": {},
                                "surfaceOp": "append"})], 2,
         'session event "turn/start" is not surface-eligible and cannot carry surfaceOp'),
    ],
)
def test_rejections_name_path_line_and_rule(
    tmp_path: Path, lines: list[bytes], line: int, rule: str | None
) -> None:
    path = write(tmp_path, b"".join(x + b"\n" for x in lines))
    error = rejection(path)
    assert error.path == path
    assert error.line == line
    if rule is None:
        assert error.rule.startswith("line is not valid JSON")
    else:
        assert error.rule == rule
    assert str(error) == f"{path}:{line}: {error.rule}"
    assert isinstance(error, LogValidationError)


def test_fold_rejection_keeps_the_surface_code(tmp_path: Path) -> None:
    error = rejection(write(tmp_path, jsonl(HEADER, user(1))))
    assert error.code == "SESSION_QUERY_INVALID_SURFACE"


# ---- discovery -----------------------------------------------------------------------------------
def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    logs = {
        "--home-dev-proj--/abc/session.jsonl": "abc",
        "--home-dev-proj--/a~002Fb/session.jsonl.zstd": "a/b",
        "--home-dev-other--/zzz/session.jsonl": "zzz",
        "_no-cwd/xyz/session.jsonl": "xyz",
    }
    for rel, sid in logs.items():
        data = jsonl({**HEADER, "id": sid}, user(0))
        if rel.endswith(".zstd"):
            data = zstd_frames(data)
        write(root, data, rel)
    write(root, b"ignored", "--home-dev-proj--/abc/notes.jsonl")
    write(root, b"ignored", "--home-dev-proj--/abc/other.txt")
    write(root, jsonl({**HEADER, "id": "loose"}), "loose.jsonl")
    write(root, b"ignored", "readme.txt")
    write(root, b"ignored", "plain-dir/deeper.jsonl")
    return root


def test_discovers_a_persistence_root_in_sorted_order(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    found = [p.relative_to(root).as_posix() for p in discover([root])]
    assert found == [
        "--home-dev-other--/zzz/session.jsonl",
        "--home-dev-proj--/abc/session.jsonl",
        "--home-dev-proj--/a~002Fb/session.jsonl.zstd",
        "_no-cwd/xyz/session.jsonl",
        "loose.jsonl",
    ]
    assert [read_log(p).header.id for p in discover([root])] == [
        "zzz", "abc", "a/b", "xyz", "loose"
    ]


def test_discovers_project_dirs_session_dirs_files_and_dedupes(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    project = root / "--home-dev-proj--"
    session_file = project / "abc" / "session.jsonl"
    found = discover([project, project / "abc", session_file, str(root / "loose.jsonl")])
    assert [p.relative_to(root).as_posix() for p in found] == [
        "--home-dev-proj--/abc/session.jsonl",
        "--home-dev-proj--/a~002Fb/session.jsonl.zstd",
        "--home-dev-proj--/abc/notes.jsonl",
        "loose.jsonl",
    ]
    with pytest.raises(FileNotFoundError):
        discover([root / "missing"])


def test_a_plain_directory_of_logs(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.jsonl.zstd", "c.json", "d.jsonl.bak"):
        write(tmp_path, b"{}", name)
    assert [p.name for p in discover([tmp_path])] == ["a.jsonl.zstd", "b.jsonl"]


def test_implied_session_ids(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    assert implied_session_id(root / "--home-dev-proj--/a~002Fb/session.jsonl.zstd") == "a/b"
    assert implied_session_id(root / "_no-cwd/xyz/session.jsonl") == "xyz"
    assert implied_session_id(root / "loose.jsonl") is None
    assert implied_session_id(root / "--home-dev-proj--/abc/notes.jsonl") is None
    assert implied_session_id(tmp_path / "x" / "abc" / "session.jsonl") is None


def test_decode_segment_inverts_encode_segment() -> None:
    assert decode_segment("abc-1_2.x") == "abc-1_2.x"
    assert decode_segment("~002E") == "."
    assert decode_segment("~002E~002E") == ".."
    assert decode_segment("a~007Eb~0020c") == "a~b c"
    assert decode_segment("~D83D~DE00") == "\U0001f600"
    assert decode_segment("~D800") == "\ud800"
    for bad in ("a b", "~zz", "~002e", "~00", "", "a/b"):
        assert decode_segment(bad) is None


def test_root_header_must_match_the_folder_id(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl({**HEADER, "id": "other"}), "--p--/abc/session.jsonl")
    error = rejection(path)
    assert (error.line, error.rule) == (
        1, 'session header id "other" does not match session id "abc"'
    )
    assert read_log(path, expected_id="other").header.id == "other"


# ---- the real corpus -----------------------------------------------------------------------------
INVALID = {
    # seqs 6..86 are missing: line 8 jumps from seq 5 to seq 87.
    "apps__web__cordis-tool-round__session.jsonl":
        (8, "session event seq 87 is not contiguous; expected 6"),
    # One-event fixtures whose only event has seq 1: there is no seq 0.
    "packages__test-support__acp-snapshot__fixtures__suite__authored-error__session.jsonl":
        (2, "session event seq 1 is not contiguous; expected 0"),
    "packages__test-support__acp-snapshot__fixtures__suite__blocked-log__session.jsonl":
        (2, "session event seq 1 is not contiguous; expected 0"),
}


def load_corpus() -> tuple[list[SessionLog], dict[str, tuple[int, str]]]:
    valid: list[SessionLog] = []
    rejected: dict[str, tuple[int, str]] = {}
    for path in discover([CORPUS]):
        try:
            valid.append(read_log(path))
        except LogRejectedError as error:
            rejected[path.name] = (error.line or 0, error.rule)
    return valid, rejected


def test_corpus_loads_or_rejects_every_file_with_a_reason() -> None:
    files = discover([CORPUS])
    assert len(files) == 159
    valid, rejected = load_corpus()
    assert len(valid) == 156
    assert sum(len(log.events) for log in valid) == 15048
    assert rejected == INVALID


def test_rejected_corpus_files_really_have_seq_gaps() -> None:
    """Independent of the reader: the raw seqs of each rejected file are not 0..n-1."""
    for name in INVALID:
        seqs: list[int] = []
        for line_no, line in iter_lines(CORPUS / name):
            obj = json.loads(line)
            if line_no == 1:
                continue
            if obj["type"] in CHUNK_ROW_TAGS:
                seqs.extend(range(obj["seq0"], obj["seq0"] + len(obj["data"].get("texts")
                                                                 or obj["data"]["args"])))
            else:
                seqs.append(obj["seq"])
        assert seqs != list(range(len(seqs))), name


def canonical(obj: Any) -> str:
    """Stdlib JSON text: key order kept, ``true`` distinct from ``1`` and ``1.0`` from ``1``."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def pack(tag: str, members: list[Any]) -> dict[str, Any]:
    """Upstream ``buildRow`` applied to expanded members: must give back the stored row."""
    first = members[0]
    data: dict[str, Any] = {
        "turn": first["data"]["turn"],
        "step": first["data"]["step"],
        "index": first["data"]["chunk"]["index"],
        "dt": [b["time"] - a["time"] for a, b in itertools.pairwise(members)],
    }
    if tag == "tool-call-chunks":
        data["id"] = first["data"]["chunk"]["id"]
        if "name" in first["data"]["chunk"]:
            data["name"] = first["data"]["chunk"]["name"]
        data["args"] = [m["data"]["chunk"]["argumentsDelta"] for m in members]
    else:
        data["texts"] = [m["data"]["chunk"]["text"] for m in members]
    return {"type": tag, "seq0": first["seq"], "time0": first["time"], "data": data}


def test_every_corpus_event_reads_back_as_its_source_line() -> None:
    valid, _ = load_corpus()
    rows = 0
    for log in valid:
        events = log.events
        cursor = 0
        for line_no, line in iter_lines(log.path):
            source = json.loads(line)
            if line_no == 1:
                continue
            if source["type"] in CHUNK_ROW_TAGS:
                rows += 1
                count = len(source["data"].get("texts") or source["data"]["args"])
                members = [json.loads(e.raw) for e in events[cursor:cursor + count]]
                assert all(list(m) == ["type", "seq", "time", "data"] for m in members)
                assert all(list(m["data"]) == ["turn", "step", "chunk"] for m in members)
                assert canonical(pack(source["type"], members)) == canonical(source)
                cursor += count
            else:
                assert canonical(json.loads(events[cursor].raw)) == canonical(source)
                assert events[cursor].obj == source
                cursor += 1
        assert cursor == len(events)
        assert [e.seq for e in events] == list(range(len(events)))
    assert rows == 262  # every packed row of the corpus is in a valid log


def test_corpus_zstd_copies_read_identically(tmp_path: Path) -> None:
    valid, _ = load_corpus()
    for n, log in enumerate(valid):
        text = log.path.read_bytes()
        header_end = text.index(b"\n") + 1
        body = text[header_end:].split(b"\n")
        # Header frame, then batches of up to 5 lines per frame.
        batches = [b"\n".join(body[i:i + 5]) + (b"\n" if i + 5 < len(body) else b"")
                   for i in range(0, len(body), 5)]
        path = write(tmp_path, zstd_frames(text[:header_end], *batches), f"{n}.jsonl.zstd")
        copy = read_log(path)
        assert copy.header == log.header
        assert [e.raw for e in copy.events] == [e.raw for e in log.events]


def test_corpus_surfaces_titles_and_documents() -> None:
    valid, _ = load_corpus()
    surfaces: Counter[str] = Counter()
    title_kinds: Counter[str] = Counter()
    documents = 0
    for log in valid:
        surfaces.update(classify(log.events))
        for event in log.events:
            if event.type == "session/title":
                title_kinds[fold_title(event).source["kind"]] += 1
            if extract_text(event.type, event.data):
                documents += 1
    assert surfaces == {"log-only": 14285, "current": 761, "shadowed": 2}
    assert title_kinds == {"fallback": 126, "provider": 1}
    assert documents == 945
