#!/usr/bin/env python3
"""Prints where two JSON documents differ and exits 1 when they do (0 when equal).

    tests/support/json_diff.py GOT WANT [--ignore KEY]...

Each difference is one line: the JSON pointer, the wanted value, then the value got. Top-level
keys named by --ignore are left out of the comparison.
"""
import json
import sys


def short(v):
    return json.dumps(v)[:200]


def diff(got, want, path=""):
    if type(got) != type(want):
        return [f"{path}: {short(want)} -> {short(got)}"]
    if isinstance(got, dict):
        out = []
        for k in sorted(set(got) | set(want)):
            if k not in want:
                out.append(f"{path}/{k}: added {short(got[k])}")
            elif k not in got:
                out.append(f"{path}/{k}: removed {short(want[k])}")
            else:
                out += diff(got[k], want[k], f"{path}/{k}")
        return out
    if isinstance(got, list):
        out = [] if len(got) == len(want) else [f"{path}: {len(want)} entries -> {len(got)}"]
        for i, (g, w) in enumerate(zip(got, want)):
            out += diff(g, w, f"{path}/{i}")
        return out
    return [] if got == want else [f"{path}: {short(want)} -> {short(got)}"]


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ignore = [argv[i + 1] for i, a in enumerate(argv) if a == "--ignore" and i + 1 < len(argv)]
    with open(argv[1], encoding="utf-8") as f:
        got = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        want = json.load(f)
    for k in ignore:
        got.pop(k, None)
        want.pop(k, None)
    d = diff(got, want)
    for line in d[:60]:
        print(line)
    if len(d) > 60:
        print(f"... and {len(d) - 60} more")
    return 1 if d else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
