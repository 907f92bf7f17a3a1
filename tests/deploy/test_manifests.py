"""The deployment files (deploy/) agree with the code and with each other.

No container runs here: every check parses files. Commands in the manifests are parsed by
the real CLI parser (``worker.cli.build_parser``) with the manifest's environment, every
``SESSIONQ_*`` variable must be a real setting, and every port a probe, a Service, a
healthcheck or a listen address names must be declared by the container and the image.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import indexer.settings
import worker.settings
import worker.settings_node
from indexer.settings import IndexerSettings, RoleSettings, SnapshotRestoreSettings
from worker.cli import build_parser
from worker.cli.options import settings_from
from worker.settings import ServeSettings, TopicsSettings, WorkerSettings

yaml = pytest.importorskip("yaml", reason="PyYAML (test extra) parses the manifests")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "dockerignore.txt"
VERSION: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"sessionq:{VERSION}"
UID = 10001


# ---- loading --------------------------------------------------------------------------------
def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def k8s_objects() -> list[dict[str, Any]]:
    return [
        doc
        for p in sorted(K8S.glob("*.yaml"))
        if p.name != "kustomization.yaml"
        for doc in load_all(p)
    ]


def k8s_one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        o
        for o in k8s_objects()
        if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return doc


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def workloads() -> list[dict[str, Any]]:
    return [o for o in k8s_objects() if o["kind"] in ("StatefulSet", "Deployment", "Job")]


def configmap_env(name: str) -> dict[str, str]:
    data: dict[str, str] = k8s_one("ConfigMap", name).get("data", {})
    return {k: str(v) for k, v in data.items()}


@dataclass
class Container:
    """A sessionq container from either deployment: its argv after the entrypoint and the
    environment it runs with."""

    where: str
    image: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ports: set[int] = field(default_factory=set)
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def command(self) -> str:
        return self.argv[0]


def k8s_containers() -> Iterator[Container]:
    for obj in workloads():
        spec = pod_spec(obj)
        for c in spec.get("initContainers", []) + spec["containers"]:
            env: dict[str, str] = {}
            for source in c.get("envFrom", []):
                if "configMapRef" in source:  # a secretRef's values are not in the repo
                    env.update(configmap_env(source["configMapRef"]["name"]))
            env.update({e["name"]: str(e["value"]) for e in c.get("env", []) if "value" in e})
            assert "command" not in c, "keep the image's ENTRYPOINT (sessionq); use args"
            yield Container(
                where=f"k8s {obj['kind']}/{obj['metadata']['name']} {c['name']}",
                image=c["image"],
                argv=[str(a) for a in c.get("args", [])],
                env=env,
                ports={p["containerPort"] for p in c.get("ports", [])},
                spec=c,
            )


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def compose_command(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def compose_container_port(spec: str | dict[str, Any]) -> int:
    if isinstance(spec, dict):
        return int(spec["target"])
    return int(str(spec).split("/")[0].rsplit(":", 1)[-1])


def compose_containers() -> Iterator[Container]:
    for name, service in compose()["services"].items():
        if not str(service.get("image", "")).startswith("sessionq"):
            continue
        assert "entrypoint" not in service, "keep the image's ENTRYPOINT (sessionq)"
        yield Container(
            where=f"compose {name}",
            image=service["image"],
            argv=compose_command(service),
            env=compose_env(service),
            ports={compose_container_port(p) for p in service.get("ports", [])},
            spec=service,
        )


def sessionq_containers() -> list[Container]:
    return [
        c
        for c in [*k8s_containers(), *compose_containers()]
        if c.image.split("/")[-1].startswith("sessionq")
    ]


def listen_port(container: Container, flag: str) -> int | None:
    """The port of ``flag HOST:PORT`` in the argv, else of its SESSIONQ_ variable."""
    value: str | None = None
    if flag in container.argv:
        value = container.argv[container.argv.index(flag) + 1]
    else:
        value = container.env.get("SESSIONQ_" + flag[2:].upper().replace("-", "_"))
    return None if value is None else int(value.rsplit(":", 1)[1])


# ---- the CLI --------------------------------------------------------------------------------
def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_options() -> dict[tuple[str, ...], set[str]]:
    """Command path (e.g. ``("topics", "create")``) -> its long options."""
    out: dict[tuple[str, ...], set[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        children = subcommands(parser)
        if path and not children:
            out[path] = {
                opt for a in parser._actions for opt in a.option_strings if opt.startswith("--")
            }
        for name, child in children.items():
            walk(child, (*path, name))

    walk(build_parser(), ())
    return out


def env_name(option: str) -> str:
    return "SESSIONQ_" + option.removeprefix("--").upper().replace("-", "_")


def known_settings() -> set[str]:
    """Every environment name sessionq reads: the flat names of every role's settings."""
    names: set[str] = set()
    for module in (indexer.settings, worker.settings, worker.settings_node):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, RoleSettings):
                names |= {indexer.settings.env_name(f) for f in indexer.settings.flat_fields(obj)}
    return names


def command_path(argv: list[str]) -> tuple[str, ...]:
    options = cli_options()
    for n in (2, 1):
        if tuple(argv[:n]) in options:
            return tuple(argv[:n])
    return tuple(argv[:1])


def check_known(argv: list[str]) -> None:
    """The argv names a real command and only that command's flags (a clear message
    before argparse's exit 2)."""
    path = command_path(argv)
    options = cli_options()
    assert path in options, f"`sessionq {' '.join(path)}` is not a sessionq command"
    unknown = sorted({a.split("=")[0] for a in argv if a.startswith("--")} - options[path])
    assert not unknown, f"sessionq {' '.join(path)} has no {', '.join(unknown)}"


def command_parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        parser = subcommands(parser)[name]
    return parser


def env_as_flags(argv: list[str], env: dict[str, str]) -> list[str]:
    """``argv`` plus every SESSIONQ_ value of this command's flags written as the flag.

    argparse checks ``type`` and ``choices`` only for values given on the command line,
    never for defaults (which is where the CLI puts environment values), so each value
    the manifest sets is parsed once more as an explicit flag.
    """
    extra: list[str] = []
    for action in command_parser(command_path(argv))._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or action.nargs == 0 or set(action.option_strings) & set(argv):
            continue
        value = env.get(env_name(longs[0]))
        if value is None:
            continue
        many = action.nargs in ("+", "*")
        extra += [longs[0], *(value.split(os.pathsep) if many else [value])]
    return [*argv, *extra]


def parse(argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``sessionq ARGV`` as the container runs it, with only the container's SESSIONQ_
    environment; parsed as given and with the environment written as flags."""
    for name in [n for n in os.environ if n.startswith("SESSIONQ_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = None
    for candidate in (argv, env_as_flags(argv, env)):
        try:
            args = build_parser().parse_args(candidate)  # defaults read the environment
        except SystemExit as exc:
            pytest.fail(f"`sessionq {shlex.join(candidate)}` does not parse (exit {exc.code})")
    return args


# ---- YAML ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_yaml_file_parses_to_mappings(path: Path) -> None:
    docs = load_all(path)
    assert docs, f"{path} is empty"
    assert all(isinstance(d, dict) for d in docs)


def test_every_k8s_object_names_its_api_kind_and_name() -> None:
    for obj in k8s_objects():
        assert obj.get("apiVersion") and obj.get("kind"), obj
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", obj["metadata"]["name"])


def test_kustomization_lists_every_manifest_but_the_optional_hpa() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    resources = kustomization["resources"]
    assert all((K8S / r).is_file() for r in resources), resources
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert manifests - set(resources) == {"hpa.yaml"}
    assert "hpa.yaml" in (K8S / "kustomization.yaml").read_text()  # mentioned as optional
    assert kustomization["images"] == [{"name": "sessionq", "newTag": VERSION}]


def test_statefulset_service_and_hpa_refer_to_each_other() -> None:
    sts = k8s_one("StatefulSet")
    service = k8s_one("Service", sts["spec"]["serviceName"])
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["clusterIP"] == "None"  # headless: the StatefulSet's identities
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    hpa = k8s_one("HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("StatefulSet", sts["metadata"]["name"])
    partitions = int(configmap_env("sessionq")["SESSIONQ_PARTITIONS"])
    assert hpa["spec"]["maxReplicas"] <= partitions, "workers beyond the partitions idle"
    metric = hpa["spec"]["metrics"][0]["containerResource"]
    assert metric["container"] == "worker"


# ---- images ----------------------------------------------------------------------------------
def test_the_sessionq_image_is_the_same_everywhere() -> None:
    images = {c.where: c.image for c in sessionq_containers()}
    assert len(images) >= 6, images  # indexer, worker, topics (k8s); topics, indexer, worker
    assert set(images.values()) == {IMAGE}, images
    readme = (DEPLOY / "README.md").read_text(encoding="utf-8")
    assert f"-t {IMAGE}" in readme


def test_compose_builds_the_sessionq_image_from_the_dockerfile() -> None:
    for name, service in compose()["services"].items():
        if service.get("image") == IMAGE:
            build = service["build"]
            assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
                DOCKERFILE
            ), name


def test_the_kafka_image_is_pinned() -> None:
    images = [s["image"] for s in compose()["services"].values()]
    kafka = [i for i in images if "kafka" in i]
    assert len(kafka) == 1
    assert re.fullmatch(r"apache/kafka:\d+\.\d+\.\d+", kafka[0]), kafka


def test_no_image_floats() -> None:
    images = [
        c["image"]
        for o in workloads()
        for c in pod_spec(o).get("initContainers", []) + pod_spec(o)["containers"]
    ]
    images += [s["image"] for s in compose()["services"].values()]
    for image in images:
        assert ":" in image and not image.endswith(":latest"), image


# ---- ports -----------------------------------------------------------------------------------
def test_probe_ports_are_declared_by_their_container() -> None:
    for c in k8s_containers():
        names = {p["name"]: p["containerPort"] for p in c.spec.get("ports", [])}
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe not in c.spec:
                continue
            port = (c.spec[probe].get("httpGet") or c.spec[probe].get("tcpSocket"))["port"]
            assert port in names or port in names.values(), f"{c.where} {probe} port {port}"


def test_service_ports_target_container_ports() -> None:
    service = k8s_one("Service")
    containers = [c for c in k8s_containers() if "StatefulSet" in c.where]
    by_name = {p["name"]: p["containerPort"] for c in containers for p in c.spec.get("ports", [])}
    for port in service["spec"]["ports"]:
        target = port["targetPort"]
        assert target in by_name, f"service port {port['name']} targets {target}"
        assert by_name[target] == port["port"]


def test_metrics_listen_ports_are_the_declared_ports() -> None:
    expected = {"indexer": 9464, "worker": 9465}
    for c in sessionq_containers():
        if c.command not in expected:
            continue
        port = listen_port(c, "--metrics-listen")
        assert port == expected[c.command], f"{c.where} listens on {port}"
        assert port in c.ports, f"{c.where} does not declare/publish {port}"


def test_readiness_is_each_roles_readyz() -> None:
    sts = k8s_one("StatefulSet")
    for c in pod_spec(sts)["containers"]:
        probe = c["readinessProbe"]["httpGet"]
        assert probe["path"] == "/readyz", c["name"]
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", c["name"]
    assert {c["name"] for c in pod_spec(sts)["containers"]} == {"indexer", "worker"}


def test_compose_healthchecks_probe_the_listen_port() -> None:
    for c in compose_containers():
        test = c.spec.get("healthcheck", {}).get("test")
        if not test:
            continue
        url = next(w for w in " ".join(test).split("'") if w.startswith("http"))
        flag = "--listen" if c.command == "serve" else "--metrics-listen"
        port = listen_port(c, flag)
        assert urlsplit(url).port == port, f"{c.where} checks {url}, listens on {port}"
        assert urlsplit(url).path in ("/readyz", "/healthz")


def test_the_image_exposes_every_port_the_deployments_use() -> None:
    exposed = {int(p) for p in dockerfile_values("EXPOSE")[0].split()}
    used = {port for c in sessionq_containers() for port in c.ports}
    assert used <= exposed, used - exposed
    assert {8765, 9464, 9465} <= exposed


# ---- data dir, users, volumes ---------------------------------------------------------------
def test_indexer_and_worker_share_one_volume_at_the_data_dir() -> None:
    sts = k8s_one("StatefulSet")
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    mounts = {}
    for c in k8s_containers():
        if "StatefulSet" in c.where:
            data = c.env["SESSIONQ_DATA"]
            mounts[c.command] = {
                m["name"] for m in c.spec["volumeMounts"] if m["mountPath"] == data
            }
    assert mounts["indexer"] == mounts["worker"] and mounts["indexer"] <= claims, mounts
    services = compose()["services"]
    for role in ("indexer", "worker"):
        volumes = services[role]["volumes"]
        assert f"sessionq-data:{services[role]['environment']['SESSIONQ_DATA']}" in volumes


def test_pods_run_as_the_images_non_root_user() -> None:
    for obj in workloads():
        ctx = pod_spec(obj)["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == UID, obj["metadata"]["name"]
    assert pod_spec(k8s_one("StatefulSet"))["securityContext"]["fsGroup"] == UID


def test_compose_wiring() -> None:
    services = compose()["services"]
    kafka_env = services["kafka"]["environment"]
    internal = [
        a.split("//")[1]
        for a in kafka_env["KAFKA_ADVERTISED_LISTENERS"].split(",")
        if a.startswith(kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"] + "://")
    ]
    for c in compose_containers():
        if c.command in ("topics", "indexer", "worker"):
            assert c.env["SESSIONQ_BOOTSTRAP"] == internal[0], c.where
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert services["indexer"]["depends_on"]["topics"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["worker"]["depends_on"]["indexer"]["condition"] == "service_healthy"
    assert services["serve"]["profiles"] == ["embedded"]
    assert "depends_on" not in services["serve"] and "SESSIONQ_BOOTSTRAP" not in compose_env(
        services["serve"]
    )
    assert kafka_env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"


# ---- settings and commands -------------------------------------------------------------------
def test_every_sessionq_env_var_is_a_real_setting() -> None:
    used: dict[str, str] = {}
    for c in sessionq_containers():
        used.update({name: c.where for name in c.env if name.startswith("SESSIONQ_")})
    used.update({name: "Dockerfile" for name in dockerfile_env() if name.startswith("SESSIONQ_")})
    unknown = set(used) - known_settings()
    assert not unknown, {n: used[n] for n in unknown}


@pytest.mark.parametrize("container", sessionq_containers(), ids=lambda c: c.where)
def test_container_commands_parse_with_their_environment(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**dockerfile_env(), **container.env}
    check_known(container.argv)
    args = parse(container.argv, env, monkeypatch)
    settings = settings_from(SETTINGS_OF[container.command], args)
    if container.command in ("indexer", "worker", "serve"):
        assert getattr(settings, "data", None) == Path("/data")
    if container.command in ("indexer", "worker", "topics"):
        assert getattr(settings, "kafka", None) is not None


SETTINGS_OF: dict[str, type[RoleSettings]] = {
    "indexer": IndexerSettings,
    "worker": WorkerSettings,
    "topics": TopicsSettings,
    "serve": ServeSettings,
    "snapshot": SnapshotRestoreSettings,  # the only snapshot command a manifest runs
}


@pytest.mark.parametrize(
    "container",
    [c for c in sessionq_containers() if c.command in SETTINGS_OF],
    ids=lambda c: c.where,
)
def test_settings_classes_accept_the_manifest_environment(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings read only by a role's settings class (batch sizes, in-flight cap, topic
    names) are validated there, not by the parser."""
    for name in [n for n in os.environ if n.startswith("SESSIONQ_")]:
        monkeypatch.delenv(name)
    for name, value in {**dockerfile_env(), **container.env}.items():
        monkeypatch.setenv(name, value)
    SETTINGS_OF[container.command]()


def test_topics_job_runs_topics_create() -> None:
    job = k8s_one("Job")
    assert pod_spec(job)["containers"][0]["args"][:2] == ["topics", "create"]
    assert pod_spec(job)["restartPolicy"] in ("OnFailure", "Never")


# ---- Dockerfile ------------------------------------------------------------------------------
def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def dockerfile_values(instruction: str) -> list[str]:
    return [rest for word, rest in dockerfile_instructions() if word == instruction]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for rest in dockerfile_values("ENV"):
        for pair in shlex.split(rest):
            name, _, value = pair.partition("=")
            env[name] = value
    return env


def test_dockerfile_is_multi_stage_on_python_3_11_slim() -> None:
    args = dict(a.split("=", 1) for a in dockerfile_values("ARG") if "=" in a)
    stages = [
        re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], f.split()[0])
        for f in dockerfile_values("FROM")
    ]
    assert len(stages) >= 2
    assert stages[-1] == "python:3.11-slim"
    copies = [c for c in dockerfile_values("COPY") + dockerfile_values("RUN") if "from=build" in c]
    assert copies, "the runtime stage takes its wheels from the build stage"


def test_dockerfile_runs_sessionq_as_uid_10001_with_a_data_volume() -> None:
    [entrypoint] = dockerfile_values("ENTRYPOINT")
    assert entrypoint == '["sessionq"]'
    user = dockerfile_values("USER")[-1]
    assert user.split(":")[0] == str(UID)
    assert any(f"--uid {UID}" in run for run in dockerfile_values("RUN"))
    assert dockerfile_values("VOLUME") == ["/data"]
    assert dockerfile_env()["SESSIONQ_DATA"] == "/data"


def test_dockerfile_copies_exist_and_pass_the_suggested_dockerignore() -> None:
    rules = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert rules[0] == "**", "the suggestion is an allow-list"
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    for rest in dockerfile_values("COPY"):
        if rest.startswith("--from"):
            continue
        for source in rest.split()[:-1]:
            assert (ROOT / source).exists(), source
            assert source.rstrip("/") in allowed, f"{source} is not in {DOCKERIGNORE.name}"


# ---- snapshots -------------------------------------------------------------------------------
def test_a_new_replica_restores_the_newest_snapshot_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The StatefulSet's init container restores the newest snapshot into an empty volume
    (a no-op with data or without a snapshot), from where its indexer publishes them."""
    sts = k8s_one("StatefulSet")
    [init] = pod_spec(sts)["initContainers"]
    containers = {c.spec["name"]: c for c in k8s_containers() if "StatefulSet" in c.where}
    restore, indexer = containers[init["name"]], containers["indexer"]
    assert restore.argv[:2] == ["snapshot", "restore"] and "--if-empty" in restore.argv
    assert "--force" not in restore.argv  # never over a volume that holds data
    args = parse(restore.argv, {**dockerfile_env(), **restore.env}, monkeypatch)
    assert args.if_empty is True
    restored = settings_from(SnapshotRestoreSettings, args)
    assert restored.data == Path("/data")
    mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
    index_mounts = {m["name"]: m["mountPath"] for m in indexer.spec["volumeMounts"]}
    assert mounts["data"] == index_mounts["data"] == "/data"

    published = settings_from(
        IndexerSettings, parse(indexer.argv, {**dockerfile_env(), **indexer.env}, monkeypatch)
    )
    assert published.snapshot_to == restored.snapshot_from
    assert restored.snapshot_from.startswith("s3://")
    assert published.snapshot_every is not None and published.snapshot_keep >= 2
    # S3 keys never sit in the ConfigMap: an optional Secret feeds both containers
    assert not {k for k in configmap_env("sessionq") if "SECRET" in k or "KEY_ID" in k}
    for spec in (init, indexer.spec):
        refs = [s["secretRef"] for s in spec["envFrom"] if "secretRef" in s]
        assert refs == [{"name": "sessionq-s3", "optional": True}], spec["name"]
