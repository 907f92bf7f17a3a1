"""Benchmarks for sessionq: corpus generator, FTS5 baseline, store benchmark."""
