"""Development tooling, not part of the serving path: the demo corpus (``demo_corpus``)
and the generated protocol docs (``protocol_docs``)."""
