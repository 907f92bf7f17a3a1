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


def _docker_daemon_answers() -> bool:
    """True when the Docker SDK (a testcontainers dependency) reaches a daemon."""
    try:
        docker: Any = importlib.import_module("docker")
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=5)
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
    try:
        kafka_module: Any = importlib.import_module("testcontainers.kafka")
    except ImportError:
        return None
    if not _docker_daemon_answers():
        return None
    image = os.environ.get(ENV_IMAGE, DEFAULT_IMAGE)
    container: Any = kafka_module.KafkaContainer(image).with_kraft()
    container.start()

    def _stop() -> None:
        with contextlib.suppress(Exception):
            container.stop()

    return Broker(
        bootstrap=str(container.get_bootstrap_server()),
        kind="testcontainers",
        _stopper=_stop,
    )


def select_broker(tmp_dir: Path | str) -> Broker:
    """Pick the broker for this test session (see the module docstring)."""
    external = os.environ.get(ENV_BOOTSTRAP, "").strip()
    if external:
        return Broker(bootstrap=external, kind="external")
    container = start_testcontainers_broker()
    if container is not None:
        return container
    return start_local_broker(tmp_dir)
