"""deploy/: the KubeRay RayService validated against the RayService CRD's OpenAPI schema (vendored from
KubeRay with its licence) by check-jsonschema, its Serve config against Ray Serve's own schema, and the names of
its applications against the names the front-ends look for; the front-ends' Service keeps a session on one pod.
Nothing here reaches a Kubernetes cluster."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from labs.core.work import ray_passes

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SCHEMA = DEPLOY / "schemas" / "rayservice-ray.io-v1.json"


def strict(schema):
    """Every object that lists its properties refuses others (kubeconform's -strict): a typo fails."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def check_jsonschema(schema: dict, manifest: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(schema))
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("check-jsonschema is not installed: pip install -r requirements-dev.txt")
    return subprocess.run([exe, "--schemafile", str(schema_file), str(manifest)], capture_output=True, text=True, check=False,
                          timeout=120)


def test_the_schema_is_kuberays_with_its_licence():
    schema = json.loads(SCHEMA.read_text())
    assert "kuberay v1.7.0" in schema["$comment"]
    spec = schema["properties"]["spec"]["properties"]
    assert {"serveConfigV2", "rayClusterConfig"} <= set(spec)
    assert "workerGroupSpecs" in spec["rayClusterConfig"]["properties"]
    assert "Apache License" in (DEPLOY / "schemas" / "LICENSE-kuberay").read_text()


def test_the_rayservice_passes_the_crd_schema(tmp_path):
    run = check_jsonschema(strict(json.loads(SCHEMA.read_text())), DEPLOY / "rayservice.yaml", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("breakage", ["misspelt field", "wrong type"])
def test_the_check_catches_a_broken_rayservice(tmp_path, breakage):
    manifest = yaml.safe_load((DEPLOY / "rayservice.yaml").read_text())
    broken = copy.deepcopy(manifest)
    cluster = broken["spec"]["rayClusterConfig"]
    if breakage == "misspelt field":
        cluster["workerGroupSpec"] = cluster.pop("workerGroupSpecs")
    else:
        cluster["workerGroupSpecs"][0]["replicas"] = "two"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(broken))
    run = check_jsonschema(strict(json.loads(SCHEMA.read_text())), path, tmp_path)
    assert run.returncode != 0


def rayservice() -> dict:
    return yaml.safe_load((DEPLOY / "rayservice.yaml").read_text())


def test_the_serve_config_is_ray_serves_and_names_what_the_front_ends_ask_for():
    pytest.importorskip("ray", reason="pip install -r requirements-ray.txt")
    from ray.serve.schema import ServeDeploySchema

    config = yaml.safe_load(rayservice()["spec"]["serveConfigV2"])
    ServeDeploySchema.model_validate(config) if hasattr(ServeDeploySchema, "model_validate") \
        else ServeDeploySchema.parse_obj(config)
    for app in config["applications"]:
        assert app["name"] == ray_passes.app_name(app["args"]["model"], app["args"]["head"])
        module, _, name = app["import_path"].partition(":")
        assert (module, name) == (ray_passes.__name__, ray_passes.app_builder.__name__)
        (deployment,) = app["deployments"]
        assert deployment["name"] == "passes"
        assert deployment["max_ongoing_requests"] >= ray_passes.MAX_ONGOING
    groups = {g["groupName"]: g for g in rayservice()["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    gpu = groups["gpu-workers"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert set(groups) == {"cpu-workers", "gpu-workers"} and gpu["nvidia.com/gpu"] == "1"
    assert rayservice()["spec"]["rayClusterConfig"]["rayVersion"] in (ROOT / "requirements-ray.txt").read_text()


def test_the_front_ends_keep_a_session_on_one_pod_and_join_the_cluster():
    docs = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "frontend.yaml").read_text())}
    assert docs["Service"]["spec"]["sessionAffinity"] == "ClientIP"
    assert docs["Ingress"]["metadata"]["annotations"]["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    pod = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "LAB_RAY_ADDRESS", "value": "auto"} in pod["env"]
    assert f"{rayservice()['metadata']['name']}-head-svc:6379" in pod["args"][0]
    assert docs["Deployment"]["spec"]["replicas"] > 1


def test_the_front_ends_share_one_class_database():
    """Every front-end pod reads LAB_CLASS_DB from the Secret that deploy/postgres.yaml's server is set up with."""
    from sqlalchemy.engine import make_url

    front = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "frontend.yaml").read_text())}
    db = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "postgres.yaml").read_text())}
    pod = front["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    source = next(e for e in pod["env"] if e["name"] == "LAB_CLASS_DB")["valueFrom"]["secretKeyRef"]
    assert source["name"] == db["Secret"]["metadata"]["name"]
    url = make_url(db["Secret"]["stringData"][source["key"]])
    server = db["StatefulSet"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in server["env"]}
    assert url.get_backend_name() == "postgresql" and url.host == db["Service"]["metadata"]["name"]
    assert url.port == db["Service"]["spec"]["ports"][0]["port"] == server["ports"][0]["containerPort"]
    assert (url.username, url.database) == (env["POSTGRES_USER"], env["POSTGRES_DB"])
    assert url.password == db["Secret"]["stringData"]["password"]
