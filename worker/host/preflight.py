"""What a host can tell its user before the workers refuse its caller.

The workers' refusal is one fixed message (``SESSION_QUERY_CALLER_UNAUTHENTICATED``,
the reason only in their log), so the host client checks what it can know itself: the
claimed workspace is a clean absolute path; and, when ``sessionq keys generate`` left
the key's keyring entry beside it (``KID.entry.json``), that the entry covers the
workspace (a caller without one is covered only by ``*``). The entry is the key's own
record, not the workers' keyring, which decides: so these are warnings, the request is
still sent, and a refusal is followed by the likely cause (an unsigned request's too:
workers without a keyring answer those, so it is no warning beforehand).
"""

from __future__ import annotations

from typing import Final

from worker.authn.keyring import clean_path
from worker.authn.tokens import CallerSigner

UNSIGNED: Final = (
    "requests are not signed (no --signing-key / SESSIONQ_SIGNING_KEY and --key-id):"
    " workers with a keyring refuse them"
)


def caller_warnings(signer: CallerSigner | None, workspace: str | None) -> list[str]:
    """Why the workers will surely refuse this host's caller, as far as the host can
    tell (empty: nothing known). An unsigned request is no such case: a worker without
    a keyring answers it; it is only a refusal's likely cause (``refusal_hint``)."""
    if signer is None:
        return []
    if workspace is not None and not clean_path(workspace):
        return [
            f"the workspace {workspace!r} is not an absolute path without empty, '.' or '..'"
            " segments: no key covers it"
        ]
    entry = signer.entry
    if entry is None or entry.covers(workspace):
        return []
    prefixes = ", ".join(entry.workspaces)
    if workspace is None:
        return [
            f"no --workspace (the caller's cwd) given: key {signer.kid!r} covers {prefixes}"
            " (its entry beside the key), which a caller without a cwd is not in"
        ]
    return [
        f"key {signer.kid!r} covers {prefixes} (its entry beside the key), not the"
        f" workspace {workspace}"
    ]


def refusal_hint(signer: CallerSigner | None, workspace: str | None) -> str:
    """The likely cause of a ``SESSION_QUERY_CALLER_UNAUTHENTICATED`` reply."""
    if signer is None:
        return UNSIGNED
    known = caller_warnings(signer, workspace)
    if known:
        return known[0]
    ws = workspace if workspace is not None else "(no workspace)"
    return (
        f"the workers' keyring has no key {signer.kid!r}, or it does not cover {ws}, or the"
        f" caller's stored cwd is not {ws} (the workers' log names the reason)"
    )


def timeout_hint(caller: str) -> str:
    """The likely cause of a ``TOOL_TIMEOUT`` reply a host can name: a worker waits for a
    caller it does not know yet (its session's log may be on its way) until the
    deadline, so a mistyped or never-published caller ends as a timeout, not a refusal."""
    return (
        f"the workers wait for a caller session they do not know until the deadline: is"
        f" {caller!r} the right session id, and is its log published (sessionq publish)?"
    )
