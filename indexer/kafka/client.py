"""aiokafka for both roles: plain record values, manual partition assignment, the
indexer's events consumer and the idempotent producer every role uses. With
``worker.transports.kafka.group``, ``assignor`` and ``node_group`` the only modules that import
aiokafka."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import (
    AuthenticationFailedError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    SaslAuthenticationFailed,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    UnsupportedSaslMechanismError,
)
from aiokafka.helpers import create_ssl_context

from indexer.errors import KafkaAccessError, TopicMissingError, UndeliverableError
from indexer.kafka.backoff import backed_off
from indexer.settings import KafkaSettings

# How long a failed connection may take to explain itself (the diagnosis probe).
DIAGNOSE_TIMEOUT_S = 10.0
LAG_TIMEOUT_S = 2.0  # an end-offsets request, at most (EventsSource.lag)
STOP_TIMEOUT_S = 0.9  # stopping one client, at most (stop_client)


async def stop_client(client: AIOKafkaConsumer) -> None:
    """Stop a consumer within ``STOP_TIMEOUT_S``: with the broker gone its fetcher
    re-raises the cancellation of its own retry tasks, and leaving the group waits for a
    coordinator. A role's own cancellation still propagates."""
    try:
        await asyncio.wait_for(client.stop(), STOP_TIMEOUT_S)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except (KafkaError, OSError, TimeoutError):
        pass


def connection_options(kafka: KafkaSettings) -> dict[str, Any]:
    """THE translation of the connection settings into aiokafka client keyword
    arguments (every consumer, producer and admin client takes these)."""
    options: dict[str, Any] = {
        "bootstrap_servers": kafka.bootstrap,
        "security_protocol": kafka.security_protocol,
    }
    if kafka.security_protocol in ("SSL", "SASL_SSL"):
        context = create_ssl_context(
            cafile=str(kafka.ssl_cafile) if kafka.ssl_cafile else None,
            certfile=str(kafka.ssl_certfile) if kafka.ssl_certfile else None,
            keyfile=str(kafka.ssl_keyfile) if kafka.ssl_keyfile else None,
        )
        context.check_hostname = kafka.ssl_check_hostname
        options["ssl_context"] = context
    if kafka.security_protocol.startswith("SASL_"):
        password = kafka.password()
        options["sasl_mechanism"] = kafka.sasl_mechanism
        options["sasl_plain_username"] = kafka.sasl_username
        options["sasl_plain_password"] = password.get_secret_value() if password else None
    return options


def _cause(exc: BaseException) -> str:
    """The cause of a failed connection, in words."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: the broker certificate is not trusted ({exc.verify_message})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed ({exc.reason or exc})"
    if isinstance(exc, (SaslAuthenticationFailed, AuthenticationFailedError)):
        detail = str(exc).split(":", 1)[-1].strip() if ":" in str(exc) else str(exc)
        return f"SASL authentication failed ({detail or 'credentials refused'})"
    if isinstance(exc, UnsupportedSaslMechanismError):
        return f"SASL mechanism not enabled on the broker ({exc})"
    if isinstance(exc, ClusterAuthorizationFailedError):
        return "not authorized for this cluster operation (missing ACL)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, (OSError, TimeoutError)):
        return f"cannot connect ({type(exc).__name__}: {exc or 'timed out'})"
    return f"{type(exc).__name__}: {exc}"


async def diagnose(kafka: KafkaSettings) -> str:
    """Why the first bootstrap broker cannot be used: one connection attempt with the
    same TLS and SASL settings (aiokafka's bootstrap only says it failed)."""
    from aiokafka.conn import create_conn

    first = kafka.bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    options = connection_options(kafka)
    options.pop("bootstrap_servers")
    try:
        conn = await asyncio.wait_for(
            create_conn(
                host or "localhost",
                int(port or 9092),
                request_timeout_ms=int(DIAGNOSE_TIMEOUT_S * 1000),
                **options,
            ),
            DIAGNOSE_TIMEOUT_S,
        )
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            raise
        return _cause(exc)
    conn.close()
    return "no broker answered the metadata request"


def access_error(
    kafka: KafkaSettings, exc: BaseException, cause: str | None = None
) -> KafkaAccessError:
    """THE mapping of aiokafka's connection, TLS, SASL and authorization failures to
    one ``KafkaAccessError`` with a one-line message naming the cause."""
    who = f" as {kafka.sasl_username!r}" if kafka.sasl_username else ""
    where = f"Kafka at {kafka.bootstrap} ({kafka.security_protocol}{who})"
    if isinstance(exc, TopicAuthorizationFailedError):
        topics = (
            ", ".join(sorted(map(str, exc.args[0])))
            if exc.args and isinstance(exc.args[0], (set, list, tuple))
            else (str(exc.args[0]) if exc.args else "?")
        )
        return KafkaAccessError(f"{where}: not authorized for topic {topics} (missing ACL)")
    if isinstance(exc, GroupAuthorizationFailedError):
        group = exc.args[0] if exc.args else "?"
        return KafkaAccessError(f"{where}: not authorized for consumer group {group} (missing ACL)")
    return KafkaAccessError(f"{where}: {cause or _cause(exc)}")


ACCESS_ERRORS: tuple[type[BaseException], ...] = (
    KafkaConnectionError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
    ClusterAuthorizationFailedError,
    AuthenticationFailedError,
    TopicAuthorizationFailedError,
    GroupAuthorizationFailedError,
    ssl.SSLError,
)


@contextlib.asynccontextmanager
async def kafka_access(kafka: KafkaSettings) -> AsyncIterator[None]:
    """Raise aiokafka's access failures inside as ``KafkaAccessError``; a failed
    bootstrap is diagnosed first, so the message names the cause."""
    try:
        yield
    except ACCESS_ERRORS as exc:
        cause = await diagnose(kafka) if isinstance(exc, KafkaConnectionError) else None
        raise access_error(kafka, exc, cause) from exc


@dataclass(frozen=True, slots=True)
class InRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = ()


def to_records(batches: dict[Any, list[Any]]) -> list[InRecord]:
    """aiokafka's ``getmany`` result as plain values, partition by partition."""
    return [
        InRecord(
            tp.topic,
            tp.partition,
            m.offset,
            m.key,
            m.value,
            m.timestamp,
            tuple((k, v) for k, v in (m.headers or ())),
        )
        for tp, msgs in batches.items()
        for m in msgs
    ]


async def assign_all(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """Manually assign every partition of ``topic`` (refreshing metadata once if the
    topic is not known yet); a missing topic is a clear error, never an empty assignment."""
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        await consumer._client.force_metadata_update()
        parts = consumer.partitions_for_topic(topic)
    if not parts:
        hint = "create sessionq's topics with `sessionq topics create`"
        raise TopicMissingError(f"topic {topic!r} does not exist ({hint})", topic)
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    return tps


class EventsSource:
    """Every partition of one topic, assigned manually (no group), positioned by the
    offsets stored with the data."""

    def __init__(
        self, kafka: KafkaSettings, topic: str, *, client_id: str = "sessionq-indexer"
    ) -> None:
        self.topic = topic
        self.kafka = kafka
        self._consumer = AIOKafkaConsumer(
            **connection_options(kafka),
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            max_partition_fetch_bytes=8 * 1024 * 1024,
            fetch_max_bytes=32 * 1024 * 1024,
        )
        backed_off(self._consumer, kafka.bootstrap)
        self.partitions: list[int] = []
        self._lag: dict[int, int] = {}

    async def connect(self) -> None:
        """Reach the broker and assign every partition of the topic (a missing topic
        raises ``TopicMissingError``); ``seek`` then positions them."""
        async with kafka_access(self.kafka):
            await self._consumer.start()
            tps = await assign_all(self._consumer, self.topic)
        self.partitions = [tp.partition for tp in tps]

    async def start(self, offsets: Mapping[tuple[str, int], int]) -> None:
        await self.connect()
        await self.seek(offsets)

    async def seek(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Position every partition at its stored next offset, or the beginning."""
        fresh = []
        for p in self.partitions:
            tp = TopicPartition(self.topic, p)
            stored = offsets.get((self.topic, p))
            if stored is None:
                fresh.append(tp)
            else:
                self._consumer.seek(tp, stored)
        if fresh:
            await self._consumer.seek_to_beginning(*fresh)

    async def poll(self, timeout_ms: int, max_records: int) -> list[InRecord]:
        """The next records; a topic this user may not read raises ``KafkaAccessError``."""
        async with kafka_access(self.kafka):
            batches = await self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
        return to_records(batches)

    async def lag(self) -> dict[int, int]:
        """Records not yet consumed per partition (end offset - position); while the
        broker does not answer within ``LAG_TIMEOUT_S``, the last lag known (aiokafka
        would wait its whole request timeout, then raise out of the indexer's loop)."""
        tps = [TopicPartition(self.topic, p) for p in self.partitions]
        try:
            ends = await asyncio.wait_for(self._consumer.end_offsets(tps), LAG_TIMEOUT_S)
        except (KafkaError, TimeoutError):
            return dict(self._lag)
        out = {}
        for tp in tps:
            pos = await self._consumer.position(tp)
            out[tp.partition] = max(0, ends[tp] - pos)
        self._lag = out
        return out

    async def stop(self) -> None:
        await stop_client(self._consumer)


class Producer:
    """An idempotent (acks=all) producer; ``send`` resolves once the broker acknowledged."""

    def __init__(
        self,
        kafka: KafkaSettings,
        *,
        client_id: str,
        max_request_size: int = 8 * 1024 * 1024,
        request_timeout_ms: int = 40000,
        linger_ms: int = 0,
    ) -> None:
        """``linger_ms`` 0: requests and replies are latency-bound, one record at a time;
        bulk publishers may pass a few ms to batch."""
        self.kafka = kafka
        self._producer = AIOKafkaProducer(
            **connection_options(kafka),
            client_id=client_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=linger_ms,
            max_request_size=max_request_size,
            request_timeout_ms=request_timeout_ms,
        )
        backed_off(self._producer, kafka.bootstrap)

    async def start(self) -> None:
        async with kafka_access(self.kafka):
            await self._producer.start()

    async def send(
        self,
        topic: str,
        value: bytes,
        *,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> None:
        """Send and wait for the acknowledgement; a record the broker can never take
        (unknown topic, too large, not authorized) raises ``UndeliverableError``."""
        try:
            await self._producer.send_and_wait(topic, value, key=key, headers=list(headers) or None)
        except UnknownTopicOrPartitionError as exc:
            message = f"cannot deliver to {topic!r}: it does not exist"
            raise TopicMissingError(message, topic) from exc
        except (MessageSizeTooLargeError, KafkaTimeoutError) as exc:
            raise UndeliverableError(f"cannot deliver to {topic!r}: {type(exc).__name__}") from exc
        except TopicAuthorizationFailedError as exc:
            raise UndeliverableError(access_error(self.kafka, exc).message) from exc

    async def enqueue(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> asyncio.Future[Any]:
        """Queue a record (``None``: a tombstone); await the returned future for its
        acknowledgement."""
        async with kafka_access(self.kafka):
            fut: asyncio.Future[Any] = await self._producer.send(
                topic, value, key=key, headers=list(headers) or None
            )
        return fut

    async def flush(self) -> None:
        await self._producer.flush()

    async def missing_topics(self, topics: Collection[str], *, timeout_s: float) -> set[str]:
        """Which of ``topics`` the broker says do not exist or may not be described
        (one metadata request, answered in milliseconds: ``send`` would instead wait up
        to its request timeout for such a topic to appear, and track it for good).
        Raises ``TimeoutError`` (or a Kafka error) when no broker answers in time."""
        from aiokafka.protocol.metadata import MetadataRequest

        if not topics:
            return set()
        client = self._producer.client
        node = client.get_random_node()
        if node is None:
            raise TimeoutError("no broker is known yet")
        request = MetadataRequest(list(topics))
        response = await asyncio.wait_for(client.send(node, request), timeout_s)
        return {str(entry[1]) for entry in response.topics if entry[0] != 0}

    async def stop(self) -> None:
        """Unbounded: a producer's stop sends what is still queued (``enqueue``)."""
        await self._producer.stop()
