"""Prometheus metrics of every role (indexer, worker, serve), on a registry each process
creates explicitly — no module-level default registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    """All sessionq metrics; a role updates the ones it owns and leaves the rest at zero."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.registry = CollectorRegistry()
        r = self.registry
        self.records_applied = Counter(
            "sessionq_records_applied",
            "Event-stream records applied to the store",
            ["kind"],
            registry=r,
        )
        self.records_noop = Counter(
            "sessionq_records_noop", "Records that changed nothing (re-deliveries)", registry=r
        )
        self.dlq_records = Counter(
            "sessionq_dlq_records", "Records sent to the dead-letter topic", ["source"], registry=r
        )
        self.consumer_lag = Gauge(
            "sessionq_consumer_lag", "Records not yet consumed", ["topic", "partition"], registry=r
        )
        self.commit_seconds = Histogram(
            "sessionq_commit_seconds",
            "Store commit latency (Tantivy + SQLite)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.last_applied = Gauge(
            "sessionq_last_applied_timestamp_seconds",
            "Wall time of the last applied record",
            registry=r,
        )
        self.retention_deletes = Counter(
            "sessionq_retention_deletes",
            "Sessions past --retain-days asked to be deleted (indexer) or deleted (serve)",
            registry=r,
        )
        self.purge_seconds = Histogram(
            "sessionq_purge_seconds",
            "Purge passes (erased bytes out of the data dir's files) and their duration",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.purge_pending = Gauge(
            "sessionq_purge_pending",
            "1 while the last purge pass left erased bytes for a later pass",
            registry=r,
        )
        self.requests = Counter(
            "sessionq_requests", "Tool calls answered", ["tool", "outcome"], registry=r
        )
        self.request_seconds = Histogram(
            "sessionq_request_seconds",
            "Tool call latency",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.requests_unresolved = Counter(
            "sessionq_requests_unresolved",
            "Request offsets finished with neither a reply nor a dead letter delivered",
            registry=r,
        )
        self.deadline_sheds = Counter(
            "sessionq_deadline_sheds", "Requests already expired when dequeued", registry=r
        )
        self.reply_topic_missing = Counter(
            "sessionq_reply_topic_missing",
            "Requests dead-lettered because their reply_to topic does not exist",
            registry=r,
        )
        self.requests_shed = Counter(
            "sessionq_requests_shed",
            "Requests answered at once because their host or workspace holds its share",
            ["bound"],
            registry=r,
        )
        self.in_flight = Gauge("sessionq_in_flight_calls", "Tool calls in progress", registry=r)
        self.ready = Gauge("sessionq_ready", "1 once the role is ready", registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
