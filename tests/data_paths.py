"""Where the tests' data lives: the one definition every test imports.

Data the project wrote itself (hand-written fixtures, its own reference outputs) is in
the repository (``tests/data/``, see its README). Other projects' data — the real dsh
logs, the upstream tool schemas, the public Aider sessions — is never copied in: it is
read from the shared folder beside the clone (``SHARED``, where CI lays it). A missing
shared folder stops the run at its start with one line naming it
(``tests/conftest.py``); a missing file is an error, never a skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

TESTS_DIR: Final = Path(__file__).resolve().parent
REPO_ROOT: Final = TESTS_DIR.parent
DATA_DIR: Final = TESTS_DIR / "data"

SHARED: Final = REPO_ROOT.parent / "shared"

# The upstream dsh harness's real session logs (159 files, three invalid on purpose).
CORPUS_DIR: Final = SHARED / "corpus" / "dsh"
# The upstream tool definitions and prompt section (SPEC §9.1, §9.2).
UPSTREAM_TOOL_SCHEMAS: Final = SHARED / "conformance" / "upstream-tool-schemas.json"
# JavaScript reference outputs produced by Node 20 (number and string formatting).
JS_VECTORS: Final = DATA_DIR / "js_vectors.json"
# Logs written by hand in the Claude Code and Codex formats (the importers' fixtures:
# ``projects``/``sessions`` read cleanly, ``malformed`` holds one broken file per case).
CLAUDE_CODE_DIR: Final = DATA_DIR / "claude-code"
CODEX_DIR: Final = DATA_DIR / "codex"
# The other agents' hand-written fixtures (tests/data/README.md): Gemini CLI chats,
# OpenCode storage, Copilot CLI session state.
GEMINI_DIR: Final = DATA_DIR / "gemini"
OPENCODE_DIR: Final = DATA_DIR / "opencode"
COPILOT_DIR: Final = DATA_DIR / "copilot"
# Aider chat histories written by hand (``shop/``: a repository's history of four
# sessions, one of them an empty launch; ``copies/``: a copy named
# ``<owner>__<repo>.aider.chat.history.md``, written on Windows).
AIDER_DIR: Final = DATA_DIR / "aider"
# Real Aider chat histories of public repositories (raw/SOURCES.md names each one),
# shared by the team beside the repository and never copied into it: the tests that
# read them fail (they do not skip) when it is absent.
RELEVANCE_RAW: Final = SHARED / "relevance" / "raw"
RELEVANCE_MANIFEST: Final = SHARED / "relevance" / "claude" / "manifest.json"
