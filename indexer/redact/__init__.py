"""Secrets in session logs: detected, never indexed, never shown (docs/security.md,
"Secrets in session logs").

* ``rules``   the rule set (``rules.toml``: own rules and the detect-secrets library's
              patterns) and its digest.
* ``detect``  keyword prefilter, rule patterns, edge/entropy/allow checks, markers.
* ``values``  redaction of decoded JSON (strings one by one, JSON inside strings, members
              whose name says secret).
* ``policy``  ``Redaction``: what a mode (off, on, store) redacts, for the writer and readers.
* ``state``   the mode a data dir records; the writer's transitions; what readers honour.
* ``counts``  redactions per session and kind, for ``sessionq stats``.

The rule set loads on first use, so ``off`` costs nothing.
"""

from indexer.redact.policy import DEFAULT, MODES, OFF, Redaction, RedactMode

__all__ = ["DEFAULT", "MODES", "OFF", "RedactMode", "Redaction"]
