"""The partitioned nodes' Kubernetes files (``deploy/k8s/nodes/``) agree with the code and
with the base manifests: the command parses with the pod's environment into
``NodeSettings`` (its own group, per-partition snapshot locations), probes and the
Service name declared ports, the metrics port is the one the node listens on, the image
and the user are the base's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_manifests import (
    IMAGE,
    K8S,
    UID,
    check_known,
    configmap_env,
    dockerfile_env,
    dockerfile_values,
    known_settings,
    load_all,
    parse,
    yaml,
)
from worker.cli.options import settings_from
from worker.settings_node import NodeSettings

NODES = K8S / "nodes"


def objects() -> list[dict[str, Any]]:
    return [
        d
        for p in sorted(NODES.glob("*.yaml"))
        if p.name != "kustomization.yaml"
        for d in load_all(p)
    ]


def one(kind: str) -> dict[str, Any]:
    found = [o for o in objects() if o["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def node_container() -> dict[str, Any]:
    containers: list[dict[str, Any]] = one("StatefulSet")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["node"]
    return containers[0]


def node_env() -> dict[str, str]:
    c = node_container()
    env = {**dockerfile_env()}
    for source in c.get("envFrom", []):
        if "configMapRef" in source:
            env.update(configmap_env(source["configMapRef"]["name"]))
    env.update({e["name"]: str(e["value"]) for e in c.get("env", [])})
    return env


def test_kustomization_lists_the_node_manifests() -> None:
    kustomization = yaml.safe_load((NODES / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in NODES.glob("*.yaml") if p.name != "kustomization.yaml"
    )
    assert (
        kustomization["namespace"]
        == yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    )


def test_the_node_command_parses_into_node_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    c = node_container()
    assert c["image"] == IMAGE and "command" not in c
    env = node_env()
    assert {n for n in env if n.startswith("SESSIONQ_")} <= known_settings()
    check_known(c["args"])
    settings = settings_from(NodeSettings, parse(c["args"], env, monkeypatch))
    assert settings.data == Path("/data") and settings.keyring is not None
    assert settings.group != configmap_env("sessionq")["SESSIONQ_GROUP"]  # not the workers'
    assert settings.standby_replicas >= 1
    base = configmap_env("sessionq")["SESSIONQ_SNAPSHOT_TO"]
    assert settings.snapshot_to == settings.snapshot_from != base  # partitions, not replicas


def test_probes_service_and_metrics_use_the_declared_port() -> None:
    c = node_container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    listen = c["args"][c["args"].index("--metrics-listen") + 1]
    assert ports == {"node-metrics": int(listen.rsplit(":", 1)[1])}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["port"] in ports
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    service = one("Service")
    sts = one("StatefulSet")
    assert service["metadata"]["name"] == sts["spec"]["serviceName"]
    assert service["spec"]["clusterIP"] == "None"
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert sts["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["node-metrics"]
    exposed = {int(p) for p in dockerfile_values("EXPOSE")[0].split()}
    assert set(ports.values()) <= exposed


def test_a_node_pod_runs_as_the_image_user_with_its_data_volume() -> None:
    sts = one("StatefulSet")
    spec = sts["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsUser"] == UID and spec["securityContext"]["fsGroup"] == UID
    claims = {t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]}
    mounts = {m["name"] for m in node_container()["volumeMounts"] if m["mountPath"] == "/data"}
    assert mounts and mounts <= claims
    partitions = int(configmap_env("sessionq")["SESSIONQ_PARTITIONS"])
    assert sts["spec"]["replicas"] <= partitions  # nodes beyond the partitions own nothing
