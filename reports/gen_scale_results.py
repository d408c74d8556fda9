#!/usr/bin/env python3
"""Writes a synthetic result directory of NODES nodes x GPUS GPUs with the record count of a real
plan, for reports/bench_report_scale.sh (docs/report.md "Scale").

    gen_scale_results.py --plan RUN_JSON --env ENV_JSON --spec SPEC --out DIR
                         [--nodes 1000] [--gpus 8] [--variant baseline|current] [--seed 1]

RUN_JSON is a run.json whose "plan" lists the cases of the suite (benchmark, params, level), as
`clusterbench run --suite full` writes it before its first case. ENV_JSON is one EnvRecord (from
`clusterbench inventory`); every host gets a copy with its own name and GPUS H100 GPUs (UUID, PCI
bus id). One record per GPU for every gpu-level case, one per node for every node-level case, and
one per cluster-level case (collectives once per cluster). Metrics: the ones the benchmark writes,
around plausible values with 0.3% noise; `current` differs from `baseline` by a driver version, a 10%
slower GEMM on one GPU per 100 nodes and the same noise from another seed.
"""
import argparse
import copy
import hashlib
import json
import os
import random

# metric name, unit, higher_is_better, typical value: what each benchmark writes.
METRICS = {
    "compute.gemm": [("tflops", "TFLOP/s", True, 700.0), ("tflops_best", "TFLOP/s", True, 710.0),
                     ("sm_clock_median", "MHz", True, 1980.0), ("temperature_max", "C", False, 70.0),
                     ("power_max", "W", False, 690.0)],
    "compute.gpu_memory_bandwidth": [("bandwidth", "GB/s", True, 3000.0),
                                     ("bandwidth_best", "GB/s", True, 3050.0)],
    "compute.host_device_copy": [("bandwidth", "GB/s", True, 50.0),
                                 ("bandwidth_best", "GB/s", True, 52.0)],
    "compute.memory_bandwidth": [("bandwidth", "GB/s", True, 400.0),
                                 ("bandwidth_best", "GB/s", True, 410.0)],
    "io.fio": [("read_bw", "GB/s", True, 6.5), ("read_iops", "IOPS", True, 1.0e6),
               ("read_clat_p50", "us", False, 80.0), ("read_clat_p99", "us", False, 120.0)],
    "io.dataloader": [("samples_per_s", "samples/s", True, 5000.0), ("bandwidth", "GB/s", True, 3.0),
                      ("batch_wait_p50", "us", False, 50.0), ("batch_wait_p99", "us", False, 500.0)],
}
COLLECTIVE = [("busbw", "GB/s", True, 180.0), ("algbw", "GB/s", True, 95.0),
              ("time", "us", False, 500.0), ("wrong", "count", False, 0.0)]
DEFAULT = [("bandwidth", "GB/s", True, 20.0), ("latency_p50", "us", False, 5.0)]


def metrics_of(benchmark):
    if benchmark.startswith("collectives."):
        return COLLECTIVE
    return METRICS.get(benchmark, DEFAULT)


def case_key(benchmark, params, item):
    return benchmark + "|" + json.dumps(params, sort_keys=True, separators=(",", ":")) + "|" + item


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", required=True)
    ap.add_argument("--env", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--variant", choices=("baseline", "current"), default="baseline")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed + (a.variant == "current"))
    plan_in = json.load(open(a.plan))["plan"]
    env0 = json.load(open(a.env))
    env0 = env0[0] if isinstance(env0, list) else env0
    hosts = ["node%04d" % i for i in range(1, a.nodes + 1)]
    run_id = "20261130T090000Z-node0001" if a.variant == "baseline" else "20261201T090000Z-node0001"
    driver = "535.161.08" if a.variant == "baseline" else "550.54.15"

    def uuid(h, g):
        return "GPU-%08x-0000-4000-8000-%012x" % (int(h[4:]), g)

    def bus(g):
        return "00000000:%02X:00.0" % (0x18 + 0x10 * g)

    envs = []
    for h in hosts:
        e = copy.deepcopy(env0)
        e["host"] = h
        e["gpus"] = [{
            "index": g, "name": "NVIDIA H100 80GB HBM3", "uuid": uuid(h, g), "serial": "165%09d" % (int(h[4:]) * 8 + g),
            "pci_bus_id": bus(g), "vbios": "96.00.99.00.01", "driver": driver, "pci_device_id": "0x2330",
            "memory_gib": 79.6, "pcie": {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16},
            "nvlink_links_up": 18, "ecc_mode": "enabled", "numa_node": g // 4, "source": "nvml",
            "board_part_number": "692-2G520-0200-000", "persistence_mode": "enabled", "mig_mode": "disabled"}
            for g in range(a.gpus)]
        e.setdefault("gpu_status", {}).update({"on_pci": a.gpus, "nvml": "ok", "plugin": "ok", "cuda_devices": a.gpus})
        e.setdefault("versions", {})["driver"] = driver
        envs.append(e)

    os.makedirs(a.out, exist_ok=True)
    plan = []
    n = 0
    with open(os.path.join(a.out, "records.jsonl"), "w") as out:
        for c in plan_in:
            b, params, level = c["benchmark"], c["params"], c["level"]
            if level == "gpu":
                scopes = [({"kind": "gpu", "host": h, "rank": i * a.gpus + g, "gpu_index": g,
                            "uuid": uuid(h, g), "pci_bus_id": bus(g)}, "%s/gpu%d[%s]" % (h, g, uuid(h, g)))
                          for i, h in enumerate(hosts) for g in range(a.gpus)]
            elif level == "node":
                scopes = [({"kind": "node", "host": h, "rank": i * a.gpus}, h) for i, h in enumerate(hosts)]
            else:
                scopes = [({"kind": "cluster"}, "cluster")]
            keys = []
            for scope, item in scopes:
                key = case_key(b, params, item)
                keys.append(key)
                slow = (a.variant == "current" and b == "compute.gemm" and scope.get("gpu_index") == 3
                        and int(scope["host"][4:]) % 100 == 0)
                ms = []
                for name, unit, hib, v in metrics_of(b):
                    v *= rnd.gauss(1.0, 0.003) * (0.9 if slow and name == "tflops" else 1.0)
                    ms.append({"name": name, "value": round(v, 6), "unit": unit, "higher_is_better": hib})
                t = 0.01 * rnd.gauss(1.0, 0.005)
                rec = {"schema": "clusterbench.result/1", "run_id": run_id, "benchmark": b, "params": params,
                       "case_key": key, "status": "ok", "message": "", "metrics": ms,
                       "time": {"n": 20, "min": t * 0.99, "median": t, "mean": t, "p95": t * 1.01,
                                "max": t * 1.02, "spread": 0.005},
                       "scope": scope, "combine": "per_rank" if level == "gpu" else "max",
                       "started_at": "2026-11-30T09:00:00Z", "duration_s": 0.5}
                out.write(json.dumps(rec, separators=(",", ":")) + "\n")
                n += 1
            plan.append({"benchmark": b, "params": params, "level": level, "case_keys": keys})
    run = {"schema": "clusterbench.run/1", "run_id": run_id, "argv": ["clusterbench", "run", "--suite", "full"],
           "version": "synthetic", "suite": "full", "only": [], "set": [],
           "spec": {"path": os.path.abspath(a.spec),
                    "sha256": hashlib.sha256(open(a.spec, "rb").read()).hexdigest(),
                    "name": json.load(open(a.spec)).get("name", ""), "selected_by": "--spec"},
           "world_size": a.nodes * a.gpus, "hosts": hosts, "started_at": "2026-11-30T09:00:00Z",
           "finished_at": "2026-11-30T15:00:00Z", "exit_code": 0, "aborted": False, "abort_reason": "",
           "plan": plan, "env": envs}
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(run, f, separators=(",", ":"))
    print(n)


if __name__ == "__main__":
    main()
