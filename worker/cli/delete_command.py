"""``sessionq delete SESSION_ID...``: erase sessions, over Kafka or from a ``serve``.

Over Kafka (``--bootstrap`` and the connection settings of ``publish``) every id becomes a
delete record on the events topic, keyed like the session's other records (its cwd, or
``session:<id>``; ``worker.host.publisher``), so it lands in the session's partition
after its events and every replica applies it at the same place. The key is looked up in
a replica's data dir (``--data``, opened read only), or in a partitioned node's copy of
the global lineage (``sessionq node``'s ``--data``: every partition's sessions, so the
delete reaches the session's partition from any node); an id it does not know is reported
unknown and not sent. ``--workspace CWD`` gives the key instead, for ids no replica at
hand holds (nothing is looked up: every id is sent).

Embedded (``--url`` of a running ``sessionq serve`` and its ``--token-file``): the admin
endpoint (``worker.transports.http.admin``) deletes them and reports each.

One line per id (``ID: deleted``, ``ID: unknown ...``, ``ID: delete record published
...``); unknown ids are not an error. Exit 0 when every known id was handled, 1 when a
record could not be published or the server failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import orjson

from indexer.settings import KafkaSettings
from worker.cli.exits import EXIT_FAILED, EXIT_OK, fail
from worker.cli.options import settings_from
from worker.settings import DeleteSettings

HTTP_TIMEOUT_S = 120.0  # a delete commits and may run a purge pass before it answers


def cmd_delete(args: argparse.Namespace) -> int:
    settings = settings_from(DeleteSettings, args)
    ids = list(dict.fromkeys(args.session_ids))
    if settings.url is not None:
        if settings.kafka is not None:
            fail(args.command, "give either --url (a serve) or --bootstrap (Kafka), not both")
        return _delete_embedded(settings, ids)
    if settings.kafka is None:
        fail(args.command, "give --bootstrap (Kafka) or --url and --token-file (a serve)")
    if (settings.data is None) == (args.workspace is None):
        fail(
            args.command,
            "over Kafka give --data DIR (a replica: finds each session's partition key)"
            " or --workspace CWD, one of them",
        )
    keys = _keys(settings, ids) if args.workspace is None else {i: args.workspace for i in ids}
    targets = [(sid, keys[sid]) for sid in ids if sid in keys]
    published = asyncio.run(_publish(settings.kafka, targets)) if targets else {}
    for sid in ids:  # in the order given
        print(published.get(sid, f"{sid}: unknown (not in {settings.data}); nothing sent"))
    failed = any(": not published:" in line for line in published.values())
    return EXIT_FAILED if failed else EXIT_OK


def _keys(settings: DeleteSettings, ids: Sequence[str]) -> dict[str, str]:
    """Session id -> routing key, for the ids the replica holds (a node's dir: the ids
    its copy of the global lineage knows, in any partition)."""
    from indexer.lineage.table import LineageTable, lineage_path
    from indexer.query.service import StoreQueryService
    from worker.cli.options import data_exists

    assert settings.data is not None
    if lineage_path(settings.data).exists():  # a partitioned node's dir
        table = LineageTable(settings.data, writable=False)
        try:
            entries = {sid: table.get(sid) for sid in ids}
        finally:
            table.close()
        return {sid: e.workspace for sid, e in entries.items() if e is not None}
    if not data_exists("delete", settings.data):
        raise SystemExit(EXIT_FAILED)
    service = StoreQueryService(settings.data)
    try:
        records = {sid: service.get_session(sid) for sid in ids}
    finally:
        service.close()
    return {sid: r.header.routing_key for sid, r in records.items() if r is not None}


async def _publish(kafka: KafkaSettings, targets: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Publish one delete record per (id, key); each id's outcome line."""
    from indexer.kafka.client import Producer
    from indexer.model.records import DeleteRecord, encode_record

    producer = Producer(kafka, client_id="sessionq-delete")
    await producer.start()
    try:
        futures = [
            await producer.enqueue(
                kafka.events_topic,
                encode_record(DeleteRecord(v=1, kind="delete", session_id=sid)),
                key=key.encode(),
            )
            for sid, key in targets
        ]
        results = await asyncio.gather(*futures, return_exceptions=True)
    finally:
        await producer.stop()
    lines = {}
    for (sid, _), result in zip(targets, results, strict=True):
        if isinstance(result, BaseException):
            lines[sid] = f"{sid}: not published: {type(result).__name__}: {result}"
        else:
            lines[sid] = (
                f"{sid}: delete record published ({kafka.events_topic} partition"
                f" {result.partition}, offset {result.offset})"
            )
    return lines


def _delete_embedded(settings: DeleteSettings, ids: list[str]) -> int:
    from worker.transports.http.admin import DELETE_PATH
    from worker.webguard.token import TokenFileError, load_token

    assert settings.url is not None
    if settings.token_file is None:
        fail("delete", "--url needs --token-file (SESSIONQ_TOKEN_FILE): the admin API")
    try:
        token = load_token(settings.token_file)
    except TokenFileError as exc:
        fail("delete", f"--token-file / SESSIONQ_TOKEN_FILE: {exc}")
    request = urllib.request.Request(
        settings.url.rstrip("/") + DELETE_PATH,
        data=orjson.dumps({"session_ids": ids}),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            body: Any = orjson.loads(response.read())
    except urllib.error.HTTPError as exc:
        print(f"sessionq delete: {settings.url}: {_error_text(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except (urllib.error.URLError, OSError, orjson.JSONDecodeError) as exc:
        reason = getattr(exc, "reason", exc)
        print(f"sessionq delete: cannot reach {settings.url}: {reason}", file=sys.stderr)
        return EXIT_FAILED
    for item in body.get("results", []):
        outcome = item.get("outcome")
        note = " (not in the data dir)" if outcome == "unknown" else ""
        print(f"{item.get('session_id')}: {outcome}{note}")
    purge = body.get("purge")
    if purge is not None and purge.get("complete"):
        print(f"purged from the data dir's files in {purge.get('seconds')} s")
    elif any(item.get("outcome") == "deleted" for item in body.get("results", [])):
        print("purge of the data dir's files pending (the next pass)")
    return EXIT_OK


def _error_text(exc: urllib.error.HTTPError) -> str:
    """``HTTP 403 ADMIN_DISABLED: message`` from the server's error body."""
    try:
        error = orjson.loads(exc.read()).get("error", {})
        return f"HTTP {exc.code} {error.get('code')}: {error.get('message')}"
    except (orjson.JSONDecodeError, AttributeError, OSError):
        return f"HTTP {exc.code} {exc.reason}"
