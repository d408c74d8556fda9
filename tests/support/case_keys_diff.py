#!/usr/bin/env python3
"""Compares what two runs measured, case by case: the set of case keys with their statuses.

    tests/support/case_keys_diff.py BEFORE AFTER

BEFORE and AFTER are run directories (records.jsonl inside) or files this script wrote with
--save (one "status<TAB>case_key" line per case). The last record of a case key wins, as
read_run_dir does. Exit 0 when both hold the same keys with the same statuses, 1 otherwise
(every difference is printed), 2 on unreadable input.

    tests/support/case_keys_diff.py --save RUN_DIR OUT   # keep a run's keys for a later diff
"""
import json
import os
import sys


def load(path):
    """{case_key: status} of a run directory or of a file written by --save."""
    cases = {}
    if os.path.isdir(path):
        with open(os.path.join(path, "records.jsonl"), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SystemExit(f"{path}/records.jsonl:{n}: {e}")
                cases[r["case_key"]] = r["status"]
        return cases
    with open(path, encoding="utf-8") as f:
        for line in f:
            status, key = line.rstrip("\n").split("\t", 1)
            cases[key] = status
    return cases


def main(argv):
    if len(argv) == 4 and argv[1] == "--save":
        cases = load(argv[2])
        with open(argv[3], "w", encoding="utf-8") as out:
            for key in sorted(cases):
                out.write(f"{cases[key]}\t{key}\n")
        print(f"{len(cases)} case(s) saved to {argv[3]}")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        before, after = load(argv[1]), load(argv[2])
    except (OSError, KeyError, ValueError) as e:
        print(f"case_keys_diff: {e}", file=sys.stderr)
        return 2
    diffs = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key, "-"), after.get(key, "-")
        if a != b:
            diffs.append(f"{b:>7} -> {a:<7} {key}")
    for d in diffs:
        print(d)
    print(f"{len(before)} case(s) before, {len(after)} after, {len(diffs)} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
