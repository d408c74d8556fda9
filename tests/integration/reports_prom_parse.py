#!/usr/bin/env python3
"""A strict parser of the Prometheus text exposition format 0.0.4, as node_exporter's textfile
collector reads it: HELP/TYPE/comment lines, samples with labels, escaped label values, Go float
values, no timestamps (the textfile collector rejects them).

    reports_prom_parse.py FILE   prints {"families": {name: {"help", "type", "samples": [[labels, value]]}}}

Exits 1 naming the line on the first violation: a bad metric or label name, a bad escape, a
duplicate label, a duplicate series, a TYPE after the family's first sample or given twice, a
family whose samples are not contiguous, a blank line, a missing final newline, a timestamp."""
import json
import re
import sys

METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf|NaN)$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class ParseError(Exception):
    pass


def parse_labels(s, i, where):
    """Parses '{a="x",b="y"}' from s[i] == '{'; returns (labels dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i:i + 1] == "}":
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ParseError(f"{where}: bad label name at column {i + 1}")
        name = m.group(0)
        if name.startswith("__"):
            raise ParseError(f"{where}: reserved label name {name}")
        if name in labels:
            raise ParseError(f"{where}: duplicate label {name}")
        i = m.end()
        if s[i:i + 2] != '="':
            raise ParseError(f"{where}: expected =\" after label {name}")
        i += 2
        value = []
        while True:
            if i >= len(s):
                raise ParseError(f"{where}: unterminated label value of {name}")
            c = s[i]
            if c == "\\":
                e = s[i + 1:i + 2]
                if e not in ("\\", '"', "n"):
                    raise ParseError(f"{where}: bad escape \\{e} in label {name}")
                value.append("\n" if e == "n" else e)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ParseError(f"{where}: raw newline in label {name}")
            else:
                value.append(c)
                i += 1
        labels[name] = "".join(value)
        if s[i:i + 1] == ",":
            i += 1
        elif s[i:i + 1] != "}":
            raise ParseError(f"{where}: expected , or }} after label {name}")


def unescape_help(text, where):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\":
            e = text[i + 1:i + 2]
            if e not in ("\\", "n"):
                raise ParseError(f"{where}: bad escape \\{e} in HELP")
            out.append("\n" if e == "n" else e)
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse(text):
    if text and not text.endswith("\n"):
        raise ParseError("the file does not end with a newline")
    families = {}
    closed = set()  # families whose samples ended: another sample would be non-contiguous
    current = None
    series = set()
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = f"line {n}"
        if line == "":
            raise ParseError(f"{where}: blank line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not METRIC.fullmatch(name):
                    raise ParseError(f"{where}: bad metric name {name!r}")
                f = families.setdefault(name, {"help": None, "type": None, "samples": []})
                rest = parts[3] if len(parts) > 3 else ""
                if parts[1] == "HELP":
                    if f["help"] is not None:
                        raise ParseError(f"{where}: second HELP for {name}")
                    f["help"] = unescape_help(rest, where)
                else:
                    if f["type"] is not None:
                        raise ParseError(f"{where}: second TYPE for {name}")
                    if f["samples"]:
                        raise ParseError(f"{where}: TYPE for {name} after its samples")
                    if rest not in TYPES:
                        raise ParseError(f"{where}: bad type {rest!r}")
                    f["type"] = rest
            continue
        m = METRIC.match(line)
        if not m:
            raise ParseError(f"{where}: bad metric name")
        name, i = m.group(0), m.end()
        labels = {}
        if line[i:i + 1] == "{":
            labels, i = parse_labels(line, i, where)
        if line[i:i + 1] != " ":
            raise ParseError(f"{where}: expected a space before the value")
        fields = line[i + 1:].split(" ")
        if len(fields) != 1:
            raise ParseError(f"{where}: a timestamp or trailing text: {line[i + 1:]!r}")
        if not FLOAT.match(fields[0]):
            raise ParseError(f"{where}: bad value {fields[0]!r}")
        if current != name:
            if current is not None:
                closed.add(current)
            if name in closed:
                raise ParseError(f"{where}: samples of {name} are not contiguous")
            current = name
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            raise ParseError(f"{where}: duplicate series {name}{labels}")
        series.add(key)
        f = families.setdefault(name, {"help": None, "type": None, "samples": []})
        f["samples"].append([labels, float(fields[0])])
    return families


def main():
    try:
        families = parse(open(sys.argv[1], encoding="utf-8").read())
    except ParseError as e:
        sys.exit(f"{sys.argv[1]}: {e}")
    print(json.dumps({"families": families}))


if __name__ == "__main__":
    main()
