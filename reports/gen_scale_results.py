#!/usr/bin/env python3
"""Writes a result directory of NODES nodes x GPUS GPUs as a real `clusterbench run` of a plan
writes it, for reports/bench_report_scale.sh and the scale test (docs/report.md "Scale").

    gen_scale_results.py --plan RUN_JSON --env ENV_JSON --spec SPEC --out DIR
                         [--nodes 1000] [--gpus 8] [--variant baseline|current] [--seed 1]
                         [--rounds 5] [--truth FILE]

RUN_JSON is a run.json whose "plan" lists the cases of the suite (benchmark, params, level), as
`clusterbench run --suite full` writes it before its first case. ENV_JSON is one EnvRecord (from
`clusterbench inventory`); every host gets a copy with its own name and GPUS H100 GPUs.

Records are what the run writes today (docs/records.md): every metric a benchmark times carries
its repetitions (5), their spread, a time's timer resolution and a rate's work per operation;
every ok record has its host probe (the local rank 0's records its core-to-core pair); cases that
run in rounds (the CPU GEMM, STREAM, fio, the dataloader, MPI collectives) are written once per
round, rounds 1..N-1 as snapshots carrying the rounds so far (extra.rounds, extra.snapshot) and
round N as the merged record, appended round by round; network.p2p writes one record per link
(each node meets 8 peers in all_pairs, its neighbour in ring) and the case's matrix.

`current` differs from `baseline` by what compare must find and nothing else: a 10% slower GEMM on
one GPU in every 100 (80 GPUs at 1,000 x 8), one link (the middle of the ring) at half its
bandwidth, and a driver change; the rest is the same noise (0.3%) from another seed. --truth
writes what was injected as JSON (the scale test checks compare against it).
"""
import argparse
import copy
import hashlib
import json
import os
import random

RATE, TIME, ONE, COUNT = "rate", "time", "one", "count"
# name, unit, higher_is_better, typical value, kind: what each benchmark writes. A rate carries
# its work per operation (unit x seconds), a time its timer's resolution, ONE/COUNT no repetitions.
METRICS = {
    "compute.gemm": [("tflops", "TFLOP/s", True, 700.0, RATE), ("tflops_best", "TFLOP/s", True, 710.0, ONE),
                     ("sm_clock_median", "MHz", True, 1980.0, ONE), ("temperature_max", "C", False, 70.0, ONE),
                     ("power_max", "W", False, 690.0, ONE)],
    "compute.gpu_memory_bandwidth": [("bandwidth", "GB/s", True, 3000.0, RATE),
                                     ("bandwidth_best", "GB/s", True, 3050.0, ONE)],
    "compute.host_device_copy": [("bandwidth", "GB/s", True, 50.0, RATE),
                                 ("bandwidth_best", "GB/s", True, 52.0, ONE)],
    "compute.memory_bandwidth": [("bandwidth", "GB/s", True, 400.0, RATE),
                                 ("bandwidth_best", "GB/s", True, 410.0, ONE)],
    "io.fio": [("read_bw", "GB/s", True, 6.5, RATE), ("read_iops", "IOPS", True, 1.0e6, RATE),
               ("read_clat_p50", "us", False, 80.0, TIME), ("read_clat_p99", "us", False, 120.0, ONE)],
    "io.dataloader": [("samples_per_s", "samples/s", True, 5000.0, RATE), ("bandwidth", "GB/s", True, 3.0, RATE),
                      ("batch_wait_p50", "us", False, 50.0, TIME), ("batch_wait_p99", "us", False, 500.0, ONE)],
    "network.p2p": [("bandwidth", "GB/s", True, 23.0, RATE)],
}
LATENCY_LINK = [("latency_p50", "us", False, 2.5, TIME), ("latency_p99", "us", False, 4.0, ONE)]
COLLECTIVE = [("busbw", "GB/s", True, 180.0, RATE), ("algbw", "GB/s", True, 95.0, RATE),
              ("time", "us", False, 500.0, TIME), ("wrong", "count", False, 0.0, COUNT)]
DEFAULT = [("bandwidth", "GB/s", True, 20.0, RATE), ("latency_p50", "us", False, 5.0, TIME)]
IN_ROUNDS = {"compute.memory_bandwidth", "io.dataloader", "io.fio"}
REPS = 5
# fio's own JSON rides on every fio record (extra.fio_json): about 8 KB, as fio writes it.
FIO_JSON = {"fio version": "fio-3.33", "timestamp": 1764493200, "global options": {"ioengine": "libaio"},
            "jobs": [{"jobname": "read", "groupid": 0, "error": 0, "job options": {"rw": "randread", "bs": "4k"},
                      "read": {"io_bytes": 4294967296, "bw": 1650000, "iops": 412500.0,
                               "clat_ns": {"min": 20000, "max": 900000, "mean": 80000.0,
                                           "percentile": {"%.2f" % p: int(80000 * (1 + p / 100))
                                                          for p in [1 + i * 0.5 for i in range(190)]}}},
                      "usr_cpu": 12.5, "sys_cpu": 40.1}],
            "disk_util": [{"name": "nvme0n1", "read_ios": 1048576, "util": 99.1}]}


def metrics_of(benchmark, params):
    if benchmark.startswith("collectives."):
        return COLLECTIVE
    if benchmark == "network.p2p" and params.get("mode") == "latency":
        return LATENCY_LINK
    return METRICS.get(benchmark, DEFAULT)


def in_rounds(benchmark, params, level):
    if benchmark == "compute.gemm":
        return level == "node"
    if benchmark.startswith("collectives."):
        return params.get("backend") == "mpi"
    return benchmark in IN_ROUNDS


def case_key(benchmark, params, item):
    return benchmark + "|" + json.dumps(params, sort_keys=True, separators=(",", ":")) + "|" + item


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def spread(v):
    """Relative interquartile range, as the run writes it."""
    if len(v) < 2:
        return 0.0
    s = sorted(v)
    q = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]
    m = median(v)
    return (q(0.75) - q(0.25)) / m if m else 0.0


def metric_json(name, unit, hib, kind, reps, typical):
    m = {"higher_is_better": hib, "name": name, "unit": unit}
    if kind in (RATE, TIME):
        m["reps"] = [round(x, 6) for x in reps]
        m["spread"] = spread(reps)
        m["value"] = round(median(reps), 6)
        if kind == RATE:
            m["work"] = typical * 0.01
        else:
            m["resolution"] = 0.001
    else:
        m["value"] = round(reps[-1], 6)
    return m


class Writer:
    """Draws each case's values and writes its records."""

    def __init__(self, a, hosts, run_id):
        self.a, self.hosts, self.run_id = a, hosts, run_id
        self.rnd = random.Random(a.seed * 7919 + (a.variant == "current"))
        self.current = a.variant == "current"
        self.n = 0
        mid = a.nodes // 2
        self.slow_link = sorted([hosts[mid - 1], hosts[mid]]) if a.nodes > 1 else []
        self.slow_gpus = set()

    def draw(self, metrics, factor):
        """One round's repetitions of each metric."""
        out = []
        for name, unit, hib, v, kind in metrics:
            f = factor.get(name, 1.0)
            if kind == COUNT:
                out.append([0.0])
            else:
                out.append([v * f * self.rnd.gauss(1.0, 0.003) for _ in range(REPS)])
        return out

    def probe(self, c2c):
        p = {"cpu_mops": 910.0 * self.rnd.gauss(1.0, 0.002), "cpu_share": 1.0,
             "mem_gbps": 20.0 * self.rnd.gauss(1.0, 0.002)}
        if c2c:
            p["c2c_ns"] = [round(80 * self.rnd.gauss(1.0, 0.01), 1), round(80 * self.rnd.gauss(1.0, 0.01), 1)]
        return p

    def record(self, b, params, scope, key, metrics, draws, extra, rounds_done=None, planned=1):
        """A record whose metrics are `draws` (one round) or, with rounds_done, the rounds merged."""
        ms = []
        for (name, unit, hib, v, kind), d in zip(metrics, draws):
            if rounds_done is not None and kind in (RATE, TIME):
                d = [median(r) for r in d]  # a merged metric's repetitions are its round values
            elif rounds_done is not None:
                d = [x for r in d for x in r]
            ms.append(metric_json(name, unit, hib, kind, d, v))
        t = 0.01 * self.rnd.gauss(1.0, 0.003)
        rec = {"benchmark": b, "case_key": key, "combine": "per_rank" if scope["kind"] != "cluster" else "max",
               "duration_s": 0.5, "extra": extra, "message": "", "metrics": ms, "params": params,
               "run_id": self.run_id, "schema": "clusterbench.result/1", "scope": scope,
               "started_at": "2026-11-30T09:00:00Z", "status": "ok",
               "time": {"max": t * 1.01, "mean": t, "median": t, "min": t * 0.99, "n": REPS, "p95": t * 1.01,
                        "spread": 0.003}}
        self.n += 1
        return json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n"


def scopes_of(a, hosts, level, uuid, bus):
    if level == "gpu":
        return [({"gpu_index": g, "host": h, "kind": "gpu", "pci_bus_id": bus(g), "rank": i * a.gpus + g,
                  "uuid": uuid(h, g)}, "%s/gpu%d[%s]" % (h, g, uuid(h, g)), i * a.gpus + g)
                for i, h in enumerate(hosts) for g in range(a.gpus)]
    if level == "node":
        return [({"host": h, "kind": "node", "rank": i * a.gpus}, h, -1) for i, h in enumerate(hosts)]
    return [({"kind": "cluster"}, "cluster", -1)]


def extra_of(b, params):
    if b == "compute.gemm":
        return {"flop_per_op": 2 * 8192 ** 3, "dtype": params.get("dtype", "bf16"), "fast_accum": False,
                "backend": {"library": "cuBLASLt", "version": 130100},
                "algorithm": {"id": 6, "tile": "256x128", "stages": 4, "splitk": 1, "workspace": 33554432},
                "launch": "cuda_graph", "verification": {"passed": True, "max_error_ratio": 0.12, "samples": 64},
                "layout": "column-major, D = A^T B (TN), beta = 0"}
    if b == "io.fio":
        return {"profile": params.get("profile", "read"), "fio_version": "fio-3.33", "repeat": 1,
                "scratch": "/scratch/cb-fio", "fio_json": FIO_JSON}
    if b.startswith("collectives."):
        return {"size_bytes": params.get("bytes", 0), "ranks": 8000, "nodes": 1000, "busbw_factor": 1.999,
                "redop": "sum", "root": 0}
    return {"buffer_bytes": 1 << 30, "device": "NVIDIA H100 80GB HBM3"}


def p2p_links(a, hosts, params):
    n = len(hosts)
    if n < 2:
        return []
    if params.get("pattern") == "ring":
        pairs = {tuple(sorted((i, (i + 1) % n))) for i in range(n)}
    else:
        pairs = {tuple(sorted((i, (i + d) % n))) for d in range(1, min(5, n)) for i in range(n)}
    return [(hosts[i], hosts[j]) for i, j in sorted(pairs) if i != j]


def write_p2p(w, out, b, params, level_keys):
    """network.p2p: a record per link and the case's own with the matrix."""
    a, hosts = w.a, w.hosts
    metrics = metrics_of(b, params)
    index = {h: i for i, h in enumerate(hosts)}
    values = [[0] * len(hosts) for _ in hosts] if len(hosts) <= 1000 else []
    measured = []
    for x, y in p2p_links(a, hosts, params):
        slow = w.current and [x, y] == w.slow_link and params.get("mode") != "latency"
        draws = w.draw(metrics, {"bandwidth": 0.5} if slow else {})
        item = x + "<->" + y
        scope = {"host": x, "hosts": [x, y], "kind": "link"}
        out.write(w.record(b, params, scope, case_key(b, params, item), metrics, draws,
                           {"host_probe": w.probe(False)}))
        v = round(median(draws[0]), 4)
        measured.append(v)
        if values:
            values[index[x]][index[y]] = values[index[y]][index[x]] = v
    what, unit, hib = metrics[0][0], metrics[0][1], metrics[0][2]
    extreme = [("min_link_" + what, unit, hib, 0, ONE), ("max_link_" + what, unit, hib, 0, ONE)]
    draws = [[min(measured or [0])], [max(measured or [0])]]
    extra = {"matrix": {"hosts": hosts, "unit": unit, "metric": what, "values": values},
             "host_probe": w.probe(True)}
    out.write(w.record(b, params, {"kind": "cluster"}, case_key(b, params, "cluster"), extreme, draws, extra))
    level_keys.append(case_key(b, params, "cluster"))


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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--truth")
    a = ap.parse_args()
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

    w = Writer(a, hosts, run_id)
    slow_gpu = lambda rank: rank >= 0 and rank % 100 == 37  # one GPU in every 100
    os.makedirs(a.out, exist_ok=True)
    plan = []
    later = []  # (case, scope, key, metrics, rounds so far) of the cases that run in rounds
    truth = {"slow_gpus": [], "slow_link": w.slow_link, "driver": [ "535.161.08", "550.54.15"]}
    with open(os.path.join(a.out, "records.jsonl"), "w") as out:
        for c in plan_in:
            b, params, level = c["benchmark"], c["params"], c["level"]
            keys = []
            if b == "network.p2p":
                write_p2p(w, out, b, params, keys)
                plan.append({"benchmark": b, "params": params, "level": level, "case_keys": keys})
                continue
            metrics = metrics_of(b, params)
            rounds = a.rounds if in_rounds(b, params, level) else 1
            for scope, item, rank in scopes_of(a, hosts, level, uuid, bus):
                key = case_key(b, params, item)
                keys.append(key)
                slow = w.current and b == "compute.gemm" and slow_gpu(rank)
                if slow and scope["uuid"] not in truth["slow_gpus"]:
                    truth["slow_gpus"].append(scope["uuid"])
                factor = {"tflops": 0.9, "tflops_best": 0.9} if slow else {}
                draws = w.draw(metrics, factor)
                c2c = scope.get("gpu_index", 0) == 0
                extra = extra_of(b, params)
                extra["host_probe"] = w.probe(c2c)
                if rounds == 1:
                    out.write(w.record(b, params, scope, key, metrics, draws, extra))
                else:
                    state = {"b": b, "params": params, "scope": scope, "key": key, "metrics": metrics,
                             "rounds": [draws], "probes": [extra["host_probe"]], "extra": extra, "factor": factor}
                    out.write(snapshot(w, state, a.rounds, final=a.rounds == 1))
                    later.append(state)
            plan.append({"benchmark": b, "params": params, "level": level, "case_keys": keys})
        for r in range(2, a.rounds + 1):  # each later round runs the round cases again, in plan order
            for state in later:
                state["rounds"].append(w.draw(state["metrics"], state["factor"]))
                state["probes"].append(w.probe("c2c_ns" in state["probes"][0]))
                out.write(snapshot(w, state, a.rounds, final=r == a.rounds))
    run = {"schema": "clusterbench.run/1", "run_id": run_id, "argv": ["clusterbench", "run", "--suite", "full"],
           "version": "synthetic", "suite": "full", "only": [], "set": [], "rounds": a.rounds,
           "spec": {"path": os.path.abspath(a.spec),
                    "sha256": hashlib.sha256(open(a.spec, "rb").read()).hexdigest(),
                    "name": json.load(open(a.spec)).get("name", ""), "selected_by": "--spec"},
           "world_size": a.nodes * a.gpus, "hosts": hosts, "started_at": "2026-11-30T09:00:00Z",
           "finished_at": "2026-11-30T15:00:00Z", "exit_code": 0, "aborted": False, "abort_reason": "",
           "plan": plan, "env": envs}
    with open(os.path.join(a.out, "run.json"), "w") as f:
        json.dump(run, f, separators=(",", ":"))
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(truth, f)
    print(w.n)


def snapshot(w, state, planned, final):
    """The record of a round case after its rounds so far: merged, a snapshot until the last."""
    rounds = state["rounds"]
    per_metric = [[rd[i] for rd in rounds] for i in range(len(state["metrics"]))]
    extra = dict(state["extra"])
    probes = state["probes"]
    extra["host_probe"] = {k: v for k, v in probes[-1].items() if k != "c2c_ns"}
    extra["rounds"] = {"planned": planned, "run": len(rounds),
                       "values": {m[0]: [round(median(r), 6) for r in per_metric[i]]
                                  for i, m in enumerate(state["metrics"])},
                       "c2c_ns": [p.get("c2c_ns") for p in probes]}
    if not final:
        extra["snapshot"] = True
    return w.record(state["b"], state["params"], state["scope"], state["key"], state["metrics"], per_metric,
                    extra, rounds_done=len(rounds), planned=planned)


if __name__ == "__main__":
    main()
