"""sessionq indexer: session logs -> Tantivy full-text index + SQLite lineage/event tables."""
