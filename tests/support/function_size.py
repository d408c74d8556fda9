#!/usr/bin/env python3
"""Function, class and file lengths of the C++/CUDA sources outside tests/ (ctest `function_size`).

    tests/support/function_size.py SOURCE_DIR [--max N] [--list M] [--class-max C] [--file-max F]

Universal Ctags gives every function definition (lambdas too) with its start line; the body is the
brace-balanced block from the first '{' after that line (comments, strings, character and raw
string literals skipped). Length = last line - start line + 1. Exit 1 when a function is longer
than --max (default 80), naming each with file:line; --list M also prints every function longer
than M (a report, not a failure). A class or struct longer than --class-max (default 300: it holds
two concerns) and a file longer than --file-max lines (default 800) fail the same way, but for
the files of OWNED_ELSEWHERE, which their owners split. Needs universal-ctags (scripts/setup.sh
installs it).
"""
import json
import os
import re
import subprocess
import sys

DIRS = ["bench", "compute", "collectives", "io", "network", "reports"]

# Files over the file and class limits that the GPU work owns and splits itself (the training step,
# the burn-in soak and its Soak class, NVML's entry points); each leaves this list when it is split.
OWNED_ELSEWHERE = set()  # none left: every file of the GPU work is under the limits
EXT = (".cpp", ".hpp", ".h", ".cu", ".cuh")


def sources(root):
    for top in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            for f in sorted(filenames):
                if f.endswith(EXT):
                    yield os.path.join(dirpath, f)


def code_mask(text):
    """`text` with comments and literals blanked (newlines kept), so braces can be counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def body_end_line(masked, line_starts, start_line):
    """Line of the '}' closing the first '{' at or after `start_line` (1-based); None if none."""
    pos = line_starts[start_line - 1]
    open_at = masked.find("{", pos)
    if open_at < 0:
        return None
    depth = 0
    for k in range(open_at, len(masked)):
        ch = masked[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return masked.count("\n", 0, k) + 1
    return None


def definitions(path, cpp_kinds, c_kinds, kinds, scoped):
    """(name, start line, length) of every definition of a ctags kind in `kinds` in `path`: the
    brace-balanced body from its start line. `scoped` names a function with its scope."""
    cmd = ["ctags", "--output-format=json", "--fields=+n", f"--kinds-C++={cpp_kinds}",
           f"--kinds-C={c_kinds}", "--map-C++=+.cu", "--map-C++=+.cuh", "-f", "-", path]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    text = open(path, encoding="utf-8").read()
    masked = code_mask(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out = []
    for line in res.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") not in kinds:
            continue
        start = tag["line"]
        end = body_end_line(masked, line_starts, start)
        if end is not None:
            scope = tag.get("scope", "") if scoped else ""
            name = (scope + "::" if scope else "") + tag["name"]
            out.append((name, start, end - start + 1))
    return out


def functions(path):
    """(name, start line, length) of every function definition ctags finds in `path`."""
    return definitions(path, "f", "f", ("function",), scoped=True)


def classes(path):
    """(name, start line, length) of every class and struct definition ctags finds in `path`."""
    return definitions(path, "cs", "s", ("class", "struct"), scoped=False)


def size_breaches(root, class_max, file_max):
    """file:line texts of the classes over class_max lines and files over file_max lines, and the
    counts of classes and files looked at."""
    over, n_classes, n_files = [], 0, 0
    for path in sources(root):
        rel = os.path.relpath(path, root)
        n_files += 1
        if rel in OWNED_ELSEWHERE:
            continue
        lines = open(path, encoding="utf-8").read().count("\n")
        if lines > file_max:
            over.append(f"{rel}: {lines} lines (max {file_max} a file)")
        for name, start, length in classes(path):
            n_classes += 1
            if length > class_max:
                over.append(f"{rel}:{start}: class {name} is {length} lines (max {class_max})")
    return over, n_classes, n_files


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 and not argv[1].startswith("--") else ".")
    limit = int(argv[argv.index("--max") + 1]) if "--max" in argv else 80
    shown = int(argv[argv.index("--list") + 1]) if "--list" in argv else None
    try:
        subprocess.run(["ctags", "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        print("function_size: universal-ctags is missing (scripts/setup.sh installs it)")
        return 2
    over, listed, count = [], [], 0
    for path in sources(root):
        rel = os.path.relpath(path, root)
        for name, start, length in functions(path):
            count += 1
            if length > limit:
                over.append(f"{rel}:{start}: {name} is {length} lines (max {limit})")
            if shown is not None and length > shown:
                listed.append((length, f"{rel}:{start}: {name} {length}"))
    for _, text in sorted(listed, reverse=True):
        print(text)
    for text in over:
        print(text)
    print(f"function_size: {count} functions, {len(over)} over {limit} lines")
    class_max = int(argv[argv.index("--class-max") + 1]) if "--class-max" in argv else 300
    file_max = int(argv[argv.index("--file-max") + 1]) if "--file-max" in argv else 800
    sizes, n_classes, n_files = size_breaches(root, class_max, file_max)
    for text in sizes:
        print(text)
    print(f"function_size: {n_files} files and {n_classes} classes, {len(sizes)} over "
          f"{file_max} and {class_max} lines")
    return 1 if over or sizes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
