"""A secured single-node Kafka for the tests: a SASL_SSL listener (SCRAM-SHA-512), a TLS
certificate from a CA made at test time, and ACLs enforced by KRaft's StandardAuthorizer.

The jars are the ones ``deploy/kafka/start.sh`` resolves (``--resolve-only``); this
module writes the broker's configuration itself:

* ``SASL_SSL://127.0.0.1:PORT`` for clients and between brokers (as ``admin``); the
  controller listener stays PLAINTEXT on loopback (its principal, ``User:ANONYMOUS``, is
  a super user so the node can talk to its own controller).
* Users ``admin`` (super user), ``host``, ``indexer``, ``worker``, created with
  ``kafka-storage format --add-scram``.
* ACLs per role (``ROLE_ACLS``), added as ``admin`` with CreateAcls requests.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from indexer.settings import KafkaSettings
from tests.kafka.broker import START_SH, BrokerStartError

USERS = ("admin", "host", "indexer", "worker")
EVENTS, REQUESTS, REPLIES, DLQ = "sq.events", "sq.requests", "sq.replies", "sq.dlq"
WORKERS_GROUP = "sq.workers"
# (principal, operation, topics, groups): hosts write events and requests and read their
# replies; the indexer reads events and writes dead letters; workers read requests (as a
# group) and write replies and dead letters.
ROLE_ACLS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("host", "Write", (EVENTS, REQUESTS), ()),
    ("host", "Read", (REPLIES,), ()),
    ("indexer", "Read", (EVENTS,), ()),
    ("indexer", "Write", (DLQ,), ()),
    ("worker", "Read", (REQUESTS,), (WORKERS_GROUP,)),
    ("worker", "Write", (REPLIES, DLQ), ()),
)


# ---- certificates ----


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_ca(
    directory: Path, name: str
) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA; its certificate is written to ``<name>.pem``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


def make_server_keystore(
    directory: Path, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate
) -> Path:
    """``broker.pem``: the broker's PKCS#8 key and its certificate (SAN 127.0.0.1,
    localhost) signed by the CA — a Kafka ``ssl.keystore.type=PEM`` file."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("sessionq-test-broker"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    path = directory / "broker.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        + cert.public_bytes(serialization.Encoding.PEM)
        + ca_cert.public_bytes(serialization.Encoding.PEM)
    )
    return path


# ---- the broker ----


@dataclass
class SecuredBroker:
    """A running secured broker and what clients need to reach it."""

    bootstrap: str
    directory: Path
    ca_file: Path
    rogue_ca_file: Path  # a CA the broker's certificate does not chain to
    passwords: dict[str, str]
    log_path: Path
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def password_file(self, user: str) -> Path:
        return self.directory / f"{user}.password"

    def kafka(self, user: str, **overrides: object) -> KafkaSettings:
        """Settings of role ``user`` on this broker, with the ``sq.*`` topics."""
        values: dict[str, object] = {
            "bootstrap": self.bootstrap,
            "events_topic": EVENTS,
            "requests_topic": REQUESTS,
            "replies_topic": REPLIES,
            "dlq_topic": DLQ,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": user,
            "sasl_password_file": self.password_file(user),
            "ssl_cafile": self.ca_file,
        }
        values.update(overrides)
        return KafkaSettings.model_validate(values)

    def cli_args(self, user: str) -> list[str]:
        """The ``sessionq`` flags that connect as ``user``."""
        return [
            "--bootstrap", self.bootstrap,
            "--security-protocol", "SASL_SSL",
            "--sasl-mechanism", "SCRAM-SHA-512",
            "--sasl-username", user,
            "--sasl-password-file", str(self.password_file(user)),
            "--ssl-cafile", str(self.ca_file),
        ]  # fmt: skip

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _kafka_home() -> Path:
    proc = subprocess.run(
        ["bash", str(START_SH), "--resolve-only"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    for line in proc.stdout.splitlines():
        if line.startswith("kafka_home="):
            return Path(line.removeprefix("kafka_home="))
    raise BrokerStartError(f"{START_SH} --resolve-only failed:\n{proc.stderr[-3000:]}")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return f"{home}/bin/java" if home else "java"


def _jaas(user: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";'
    )


def _run_java(classpath: str, main: str, *args: str, log: Path) -> None:
    with log.open("ab") as out:
        rc = subprocess.run(
            [_java(), "-Xmx256m", "-cp", classpath, main, *args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            timeout=180, check=False,
        ).returncode  # fmt: skip
    if rc != 0:
        raise BrokerStartError(f"{main} {' '.join(args[:3])}... failed:\n{log.read_text()[-3000:]}")


async def _wait_ready(broker: SecuredBroker, proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Until ``admin`` can list the topics over SASL_SSL (the authorizer is loaded)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from indexer.kafka.client import connection_options

    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerStartError(
                f"secured broker exited ({proc.returncode}):\n{broker.log_path.read_text()[-4000:]}"
            )
        admin = AIOKafkaAdminClient(**connection_options(broker.kafka("admin")))
        try:
            await asyncio.wait_for(admin.start(), 10)
            await asyncio.wait_for(admin.list_topics(), 10)
            return
        except Exception as exc:
            last = f"{type(exc).__name__}: {exc}"
        finally:
            await admin.close()
        await asyncio.sleep(0.5)
    raise BrokerStartError(
        f"secured broker not ready in {timeout}s ({last}):\n{broker.log_path.read_text()[-4000:]}"
    )


async def _ready_with_acls(
    broker: SecuredBroker, proc: subprocess.Popen[bytes], timeout: float
) -> None:
    await _wait_ready(broker, proc, timeout)
    await add_role_acls(broker)


def start_secured_broker(directory: Path, *, timeout: float = 90.0) -> SecuredBroker:
    """Certificates, users, configuration, format, start, ACLs; stopped by ``stop()``
    (and by a watchdog when this process dies first)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_file, ca_key, ca_cert = make_ca(directory, "test-ca")
    rogue_ca_file, _, _ = make_ca(directory, "rogue-ca")
    keystore = make_server_keystore(directory, ca_key, ca_cert)
    passwords = {user: secrets.token_urlsafe(12) for user in USERS}
    for user, password in passwords.items():
        (directory / f"{user}.password").write_text(password + "\n")
    port, controller = _free_ports(2)
    config = directory / "server.properties"
    log_dirs = directory / "kraft"
    config.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.bootstrap.servers=127.0.0.1:{controller}",
                "controller.listener.names=CONTROLLER",
                f"listeners=SASL_SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
                f"advertised.listeners=SASL_SSL://127.0.0.1:{port}",
                "inter.broker.listener.name=SASL_SSL",
                "listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
                "sasl.enabled.mechanisms=SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                + _jaas("admin", passwords["admin"]),
                "ssl.keystore.type=PEM",
                f"ssl.keystore.location={keystore}",
                "ssl.truststore.type=PEM",
                f"ssl.truststore.location={ca_file}",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:admin;User:ANONYMOUS",
                "allow.everyone.if.no.acl.found=false",
                f"log.dirs={log_dirs}",
                "default.replication.factor=1",
                "min.insync.replicas=1",
                "offsets.topic.replication.factor=1",
                "offsets.topic.num.partitions=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "transaction.state.log.num.partitions=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "num.partitions=1",
                "group.initial.rebalance.delay.ms=0",
                "auto.create.topics.enable=false",
                "num.network.threads=2",
                "num.io.threads=4",
                "",
            ]
        )
    )
    log4j = directory / "log4j2.properties"
    log4j.write_text(
        "status = warn\nappender.out.type = Console\nappender.out.name = STDOUT\n"
        "appender.out.layout.type = PatternLayout\n"
        "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = STDOUT\n"
    )
    classpath = f"{_kafka_home()}/libs/*"
    log_path = directory / "broker.log"
    scram = [
        arg
        for user, password in passwords.items()
        for arg in ("--add-scram", f"SCRAM-SHA-512=[name={user},password={password}]")
    ]
    cluster_id = __import__("base64").urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    _run_java(
        classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
        "--config", str(config), "--standalone", *scram, log=directory / "format.log",
    )  # fmt: skip
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            [
                _java(), "-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={log4j}", f"-Dkafka.logs.dir={directory}",
                "-cp", classpath, "kafka.Kafka", str(config),
            ],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    # The broker dies with this process even if stop() is never called.
    subprocess.Popen(
        ["bash", "-c", f"while kill -0 {os.getpid()} && kill -0 {proc.pid}; do sleep 2; done;"
         f" kill {proc.pid} 2>/dev/null"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    broker = SecuredBroker(
        bootstrap=f"127.0.0.1:{port}",
        directory=directory,
        ca_file=ca_file,
        rogue_ca_file=rogue_ca_file,
        passwords=passwords,
        log_path=log_path,
        _proc=proc,
    )
    try:
        asyncio.run(_ready_with_acls(broker, proc, timeout))
    except BaseException:
        broker.stop()
        raise
    return broker


# Kafka's ACL enums (org.apache.kafka.common.acl / resource): what CreateAcls carries.
RESOURCE = {"topic": 2, "group": 3}
OPERATION = {"Read": 3, "Write": 4}
LITERAL, ALLOW = 3, 3


async def add_role_acls(broker: SecuredBroker) -> None:
    """``ROLE_ACLS`` as ``admin``, one CreateAcls request per binding (aiokafka speaks
    the request; the AclCommand tool is not among the broker jars)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.protocol.admin import CreateAclsRequest

    from indexer.kafka.client import connection_options

    admin = AIOKafkaAdminClient(**connection_options(broker.kafka("admin")))
    await admin.start()
    try:
        for user, operation, topics, groups in ROLE_ACLS:
            resources = [("topic", t) for t in topics] + [("group", g) for g in groups]
            for kind, name in resources:
                request = CreateAclsRequest(
                    RESOURCE[kind], name, LITERAL, f"User:{user}", "*", OPERATION[operation], ALLOW
                )
                response: Any = await admin._send_request(request)
                for code, message in response.creation_responses:
                    if code:
                        raise BrokerStartError(f"CreateAcls {user} {operation} {name}: {message}")
    finally:
        await admin.close()


if __name__ == "__main__":  # manual check: python -m tests.kafka.secured DIR
    b = start_secured_broker(Path(sys.argv[1]))
    print(f"bootstrap={b.bootstrap} ca={b.ca_file}")
    b.stop()
