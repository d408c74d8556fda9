#!/usr/bin/env python3
"""Checks a compare.json of the scale set against what its current run injected
(reports/gen_scale_results.py --truth): every GEMM case of each slow GPU regressed, each bandwidth
case of the slow link regressed, the driver change listed, and nothing else regressed. Prints what
it found; exit 1 when compare missed or invented a regression.

    check_scale_compare.py TRUTH_JSON COMPARE_JSON CURRENT_RUN_JSON
"""
import json
import sys


def main():
    truth = json.load(open(sys.argv[1]))
    cmp = json.load(open(sys.argv[2]))
    plan = json.load(open(sys.argv[3]))["plan"]
    gemm_cases = [c for c in plan if c["benchmark"] == "compute.gemm" and c["level"] == "gpu"]
    link_cases = [c for c in plan if c["benchmark"] == "network.p2p" and c["params"].get("mode") != "latency"]
    link = "<->".join(truth["slow_link"])
    slow = set(truth["slow_gpus"])
    expected = set()
    for c in gemm_cases:
        p = json.dumps(c["params"], sort_keys=True, separators=(",", ":"))
        expected.update(("compute.gemm", p, u) for u in slow)
    for c in link_cases:
        expected.add(("network.p2p", json.dumps(c["params"], sort_keys=True, separators=(",", ":")), link))
    found, invented = set(), []
    for c in cmp["cases"]:
        if c["verdict"] != "regressed":
            continue
        p = json.dumps(c["params"], sort_keys=True, separators=(",", ":"))
        item = c["item"]
        who = item[item.find("[") + 1:-1] if "[" in item else item
        key = (c["benchmark"], p, who)
        (found.add(key) if key in expected else invented.append(c["case_key"]))
    missed = sorted(expected - found)
    drivers = [e for e in cmp["env_changes"] if e["field"] == "driver"]
    driver_ok = any(e["baseline"] == truth["driver"][0] and e["current"] == truth["driver"][1] for e in drivers)
    counted = cmp["counts"]["regressed"]
    print("compare: %d regressed (%d expected: %d GPUs x %d GEMM cases, the link %s x %d cases); "
          "missed %d, invented %d; driver change %s" %
          (counted, len(expected), len(slow), len(gemm_cases), link, len(link_cases), len(missed),
           len(invented), "listed" if driver_ok else "NOT listed"))
    for k in missed[:5]:
        print("  missed:", k)
    for k in invented[:5]:
        print("  invented:", k)
    ok = not missed and not invented and driver_ok and counted == len(expected) and len(slow) > 0
    print("regressions: " + ("EXACT" if ok else "WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
