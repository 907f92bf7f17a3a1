"""A new path under a dsh root is placed from the path alone, and the placement names
exactly the logs a walk of the root would find for it; anything the path cannot tell
is left to a walk (None)."""

from __future__ import annotations

from pathlib import Path

from indexer.logs.placement import place
from indexer.logs.roots import walk_root


def write(path: Path, text: str = '{"type":"session/start"}\n') -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def placed(root: Path, path: Path, *, has_logs: bool = True) -> list[Path] | None:
    sources = place(root, None, None, path, has_logs=has_logs)
    return None if sources is None else sorted(s.path for s in sources)


def walked_below(root: Path, path: Path) -> list[Path]:
    return sorted(p for p in walk_root(root).files if p == path or p.is_relative_to(path))


def test_a_new_session_log_is_placed_as_the_walk_would(tmp_path: Path) -> None:
    log = write(tmp_path / "--home-me-app--" / "s-1" / "session.jsonl")
    assert placed(tmp_path, log) == walked_below(tmp_path, log) == [log]


def test_a_new_project_directory_brings_every_log_below_it(tmp_path: Path) -> None:
    project = tmp_path / "--home-me-app--"
    write(project / "s-1" / "session.jsonl")
    write(project / "s-2" / "session.jsonl.zstd", "")
    write(project / "s-2" / "notes.txt", "not a log")
    assert placed(tmp_path, project) == walked_below(tmp_path, project)
    assert len(placed(tmp_path, project) or []) == 2


def test_a_new_session_directory_brings_its_log(tmp_path: Path) -> None:
    session = tmp_path / "--home-me-app--" / "s-3"
    write(session / "session.jsonl")
    assert placed(tmp_path, session) == walked_below(tmp_path, session)


def test_a_top_level_log_is_placed_only_where_the_root_holds_logs(tmp_path: Path) -> None:
    loose = write(tmp_path / "exported.jsonl")
    assert placed(tmp_path, loose) == [loose]
    assert placed(tmp_path, loose, has_logs=False) is None


def test_what_the_path_cannot_tell_is_left_to_a_walk(tmp_path: Path) -> None:
    stray = write(tmp_path / "not-a-project" / "s-1" / "session.jsonl")
    other_name = write(tmp_path / "--home-me-app--" / "s-1" / "other.jsonl")
    outside = write(tmp_path.parent / f"{tmp_path.name}-elsewhere.jsonl")
    assert placed(tmp_path, stray) is None
    assert placed(tmp_path, other_name) is None
    assert placed(tmp_path, outside) is None
    assert place(tmp_path, None, "claude-code", stray, has_logs=True) is None
