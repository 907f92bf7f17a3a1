"""Snapshots of a data directory: a consistent copy of the Tantivy index, the SQLite
tables and their stored Kafka offsets, taken while the indexer runs, published to a
directory or an S3-compatible bucket, and restored (checksums verified) into a new
replica's data dir, whose indexer then resumes from the copied offsets.

``copy`` (the consistent local copy), ``manifest`` (names, checksums), ``stores``
(directory and S3 locations), ``create`` (publish and prune), ``restore``, ``schedule``
(the indexer's periodic snapshots).
"""
