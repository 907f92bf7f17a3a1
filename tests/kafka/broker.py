"""Which Kafka broker the tests talk to, and how to start a local one.

Selection (:func:`select_broker`), first match wins:

1. ``SESSIONQ_KAFKA_BOOTSTRAP`` is set: use that running broker as is (nothing is
   started or stopped).
2. testcontainers is importable and a Docker daemon answers: a throwaway
   ``KafkaContainer`` in KRaft mode (image ``SESSIONQ_KAFKA_IMAGE``). Set
   ``SESSIONQ_KAFKA_DOCKER=0`` to skip this branch.
3. Otherwise: a real Apache Kafka broker from ``deploy/kafka/start.sh`` (JVM, no
   Docker), whose jars are resolved with Maven on first use.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = REPO_ROOT / "deploy" / "kafka"
START_SH = DEPLOY_DIR / "start.sh"
STOP_SH = DEPLOY_DIR / "stop.sh"

ENV_BOOTSTRAP = "SESSIONQ_KAFKA_BOOTSTRAP"
ENV_IMAGE = "SESSIONQ_KAFKA_IMAGE"
ENV_DOCKER = "SESSIONQ_KAFKA_DOCKER"
# Confluent Platform 7.9 = Apache Kafka 3.9 (KRaft). testcontainers-python's
# KafkaContainer drives Confluent's image scripts, so only cp-kafka images fit.
DEFAULT_IMAGE = "confluentinc/cp-kafka:7.9.0"

# The settings of deploy/kafka/start.sh that tests rely on and that differ from the
# cp-kafka defaults KafkaContainer leaves in place: one replica of the transaction log
# (a single broker could not serve transactions otherwise) and no auto-created topics
# (a reply to a missing topic must fail). Confluent images map KAFKA_X_Y to x.y.
CONTAINER_BROKER_ENV = {
    "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    "KAFKA_DEFAULT_REPLICATION_FACTOR": "1",
    "KAFKA_MIN_INSYNC_REPLICAS": "1",
    "KAFKA_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "1",
}
# How long a started KafkaContainer may take to log that the broker is up.
CONTAINER_START_TIMEOUT_S = 120.0
# First run resolves ~45 MB of jars with Maven before the broker starts.
RESOLVE_BUDGET_S = 900.0


class BrokerStartError(RuntimeError):
    """The broker could not be started; the message carries the script's output."""


@dataclass
class Broker:
    """A broker the tests can reach at ``bootstrap`` (``host:port``)."""

    bootstrap: str
    kind: str  # "external" | "testcontainers" | "local"
    pid: int | None = None
    data_dir: Path | None = None
    log_path: Path | None = None
    _stopper: Callable[[], None] | None = field(default=None, repr=False)

    def stop(self) -> None:
        """Stop the broker if this process started it. Idempotent."""
        stopper, self._stopper = self._stopper, None
        if stopper is not None:
            stopper()


def _parse_kv(stdout: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in stdout.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep:
            out[key] = value
    return out


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


def start_local_broker(
    tmp_dir: Path | str,
    *,
    port: int | None = None,
    timeout: float = 60.0,
    stop_with_this_process: bool = True,
) -> Broker:
    """Start a single-node KRaft Apache Kafka via ``deploy/kafka/start.sh``.

    ``tmp_dir`` becomes the broker's data dir (config, metadata, topic logs,
    ``broker.log``). Resolves the jars first if they are not cached yet. With
    ``stop_with_this_process`` the broker is also stopped by a watchdog when this
    Python process dies without calling :meth:`Broker.stop`.
    """
    data_dir = Path(tmp_dir).resolve()
    cmd = ["bash", str(START_SH), "--data", str(data_dir), "--timeout", str(int(timeout))]
    if port is not None:
        cmd += ["--port", str(port)]
    if stop_with_this_process:
        cmd += ["--owner-pid", str(os.getpid())]
    env = dict(os.environ)
    # The readiness probe needs only the stdlib; any Python 3 will do, use ours.
    env.setdefault("SESSIONQ_PYTHON", sys.executable)
    try:
        proc = subprocess.run(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout + RESOLVE_BUDGET_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BrokerStartError(f"{START_SH} did not finish: {exc}") from exc
    info = _parse_kv(proc.stdout)
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    if proc.returncode != 0 or not last[0].startswith("bootstrap="):
        raise BrokerStartError(
            f"{START_SH} failed (exit {proc.returncode}).\n"
            f"--- stderr ---\n{_tail(proc.stderr)}\n--- stdout ---\n{_tail(proc.stdout)}"
        )

    def _stop() -> None:
        subprocess.run(
            ["bash", str(STOP_SH), "--data", str(data_dir)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=False,
        )

    return Broker(
        bootstrap=last[0].removeprefix("bootstrap="),
        kind="local",
        pid=int(info["pid"]) if info.get("pid", "").isdigit() else None,
        data_dir=data_dir,
        log_path=Path(info["log"]) if "log" in info else None,
        _stopper=_stop,
    )


def _kafka_module() -> Any | None:
    """testcontainers' Kafka module: ``testcontainers.community.kafka`` since 4.15,
    ``testcontainers.kafka`` before (now a deprecated alias); None when not installed."""
    for name in ("testcontainers.community.kafka", "testcontainers.kafka"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _docker_daemon_answers() -> bool:
    """True when a Docker daemon answers a ping, found the way testcontainers finds it
    (``tc.host`` in ``~/.testcontainers.properties``, ``DOCKER_HOST``, the docker context)."""
    try:
        docker_client: Any = importlib.import_module("testcontainers.core.docker_client")
    except ImportError:
        return False
    try:
        client = docker_client.DockerClient(timeout=5).client
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def start_testcontainers_broker() -> Broker | None:
    """A KafkaContainer (KRaft) if testcontainers is installed and Docker answers."""
    if os.environ.get(ENV_DOCKER, "1").strip().lower() in {"0", "false", "no", "off"}:
        return None
    kafka_module = _kafka_module()
    if kafka_module is None or not _docker_daemon_answers():
        return None
    image = os.environ.get(ENV_IMAGE, DEFAULT_IMAGE)
    containers: list[Any] = []

    def _stop() -> None:
        for container in containers:
            with contextlib.suppress(Exception):
                container.stop()

    try:
        # The constructor already connects to Docker; start() pulls the image, then
        # waits up to ``timeout`` s for the broker's "Kafka Server started" log line.
        container: Any = kafka_module.KafkaContainer(image).with_kraft()
        containers.append(container)
        for key, value in CONTAINER_BROKER_ENV.items():
            container.with_env(key, value)
        container.start(timeout=int(CONTAINER_START_TIMEOUT_S))
        bootstrap = str(container.get_bootstrap_server())
    except Exception as exc:
        _stop()
        raise BrokerStartError(
            f"testcontainers could not start {image} ({type(exc).__name__}: {exc}); "
            f"set {ENV_DOCKER}=0 to use the local broker instead"
        ) from exc
    return Broker(bootstrap=bootstrap, kind="testcontainers", _stopper=_stop)


def select_broker(tmp_dir: Path | str) -> Broker:
    """Pick the broker for this test session (see the module docstring)."""
    external = os.environ.get(ENV_BOOTSTRAP, "").strip()
    if external:
        return Broker(bootstrap=external, kind="external")
    container = start_testcontainers_broker()
    if container is not None:
        return container
    return start_local_broker(tmp_dir)
