"""scripts/launch/mpijob.yaml against the MPI Operator's MPIJob schema, and the fields it needs to
start (reports_launch.sh runs it: python3 launch_mpijob.py MPIJOB RESULTS_PVC CRD).

The schema is the CRD's openAPIV3Schema for v2beta1 (tests/fixtures/k8s, its source in its
header), checked with jsonschema as kubectl's strict field validation would: an object schema
with `properties` takes no other field (Kubernetes prunes or, strictly, rejects unknown fields),
unless it says x-kubernetes-preserve-unknown-fields. A mistyped field name fails here.
"""
import copy
import sys

import jsonschema
import yaml


def strict(schema):
    """The schema with additionalProperties: false where Kubernetes accepts no unknown field."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def load_schema(crd_path):
    crd = yaml.safe_load(open(crd_path))
    assert crd["kind"] == "CustomResourceDefinition" and crd["spec"]["group"] == "kubeflow.org"
    (v2,) = [v for v in crd["spec"]["versions"] if v["name"] == "v2beta1"]
    return strict(v2["schema"]["openAPIV3Schema"])


def errors(schema, doc):
    v = jsonschema.Draft7Validator(schema)
    return sorted("/".join(map(str, e.absolute_path)) + ": " + e.message for e in v.iter_errors(doc))


def check_fields(job, pvc):
    s = job["spec"]
    specs = s["mpiReplicaSpecs"]
    assert set(specs) == {"Launcher", "Worker"}, specs.keys()
    assert s["launcherCreationPolicy"] == "WaitForWorkersReady", s
    assert s["mpiImplementation"] == "OpenMPI", s
    w, l = specs["Worker"], specs["Launcher"]
    wpod, lpod = w["template"]["spec"], l["template"]["spec"]
    (wc,) = wpod["containers"]
    (lc,) = lpod["containers"]
    entry = "/usr/share/clusterbench/scripts/launch/mpijob-entry.sh"
    # Workers run sshd (host keys made at start); Ready when it listens on the image's port.
    assert wc["command"] == [entry, "worker"], wc.get("command")
    assert wc["readinessProbe"]["tcpSocket"]["port"] == 2222, wc["readinessProbe"]
    # The launcher waits for every worker over SSH, then runs mpirun: -np = replicas x slots.
    assert lc["command"] == [entry, "launcher"], lc.get("command")
    args = lc["args"]
    assert args[0] == "mpirun" and "--allow-run-as-root" in args, args
    np_ = int(args[args.index("-np") + 1])
    assert np_ == w["replicas"] * s["slotsPerWorker"] == 16, np_
    assert args[args.index("/usr/bin/clusterbench") + 1] == "run", args
    assert args[args.index("--results") + 1] == "/results", args
    # One GPU per slot, an RDMA device, host networking, IPC_LOCK, a memory-backed /dev/shm.
    limits = wc["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == s["slotsPerWorker"] == 8, limits
    assert limits.get("rdma/rdma_shared_device_a") == 1, limits
    assert "nvidia.com/gpu" not in str(l), "the launcher asks for a GPU"
    assert wpod["hostNetwork"] is True and wpod["dnsPolicy"] == "ClusterFirstWithHostNet", wpod
    assert "IPC_LOCK" in wc["securityContext"]["capabilities"]["add"], wc["securityContext"]
    mounts = {m["mountPath"]: m["name"] for m in wc["volumeMounts"]}
    vols = {v["name"]: v for v in wpod["volumes"]}
    assert vols[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory", vols
    # Results on a claim every worker can mount: ReadWriteMany.
    claim = vols[mounts["/results"]]["persistentVolumeClaim"]["claimName"]
    assert pvc["kind"] == "PersistentVolumeClaim" and pvc["metadata"]["name"] == claim, pvc
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], pvc["spec"]
    # The launcher passes the NCCL variables it sets to every rank.
    env = {e["name"]: e["value"] for e in lc["env"]}
    for name in ("NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"):
        assert name in env and args[args.index(name) - 1] == "-x", (name, args)


def main():
    job_path, pvc_path, crd_path = sys.argv[1:4]
    docs = list(yaml.safe_load_all(open(job_path)))
    assert len(docs) == 1, len(docs)
    job = docs[0]
    assert job["apiVersion"] == "kubeflow.org/v2beta1" and job["kind"] == "MPIJob", job
    schema = load_schema(crd_path)
    errs = errors(schema, job)
    assert not errs, "mpijob.yaml does not validate:\n" + "\n".join(errs)
    print("ok: mpijob.yaml validates against the MPIJob CRD's v2beta1 schema (strict fields)")
    # The validator bites: a misspelt field, a wrong type and an unknown enum value fail.
    bad = copy.deepcopy(job)
    w = bad["spec"]["mpiReplicaSpecs"]["Worker"]
    w["template"]["spec"]["containers"][0]["comand"] = ["sshd"]
    w["replicas"] = "two"
    bad["spec"]["mpiImplementation"] = "MVAPICH"
    errs = "\n".join(errors(schema, bad))
    for want in ("'comand' was unexpected", "'two' is not of type 'integer'", "'MVAPICH' is not one of"):
        assert want in errs, (want, errs)
    print("ok: a misspelt field, a string replica count and an unknown MPI fail the same check")
    check_fields(job, yaml.safe_load(open(pvc_path)))
    print("ok: mpijob.yaml: workers run sshd (entry worker, ready on 2222), the launcher waits"
          " (WaitForWorkersReady + entry launcher), -np 16 = 2 x 8, nvidia.com/gpu 8,"
          " rdma/rdma_shared_device_a, hostNetwork, IPC_LOCK, /dev/shm in memory, results on"
          " the ReadWriteMany claim")


if __name__ == "__main__":
    main()
