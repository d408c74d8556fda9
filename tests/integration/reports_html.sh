#!/usr/bin/env bash
# report.html on the fleet fixture (4 nodes x 8 GPUs): gnuplot charts with one mark per record,
# self-contained (no script, no external resource), and, where Chromium is installed, loaded in
# headless Chromium: no console errors, every chart's SVG has a non-zero box, --pdf prints a PDF.
# Budget: < 60 s (gnuplot ~1 s, Chromium ~5 s per start).
source "$(dirname "$0")/lib.sh"
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot not installed (scripts/setup.sh installs gnuplot-nox)"; exit 77; }

RUN=$TMP/fleet
cp -r "$CB_FIXTURES/results/fleet-4x8" "$RUN"
expect_rc 0 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --html "$TMP/copy.html"
cmp -s "$RUN/report.html" "$TMP/copy.html" || fail "--html copy differs from report.html"
ok "report writes report.html (and --html copies it)"

# --html/--pdf never replace a run's own file, a directory or a device, and say so before any
# work; a report that could not be written is not stood in for by an older report.html.
sum0=$(sha256sum "$RUN/records.jsonl")
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$RUN/records.jsonl"
expect_out "--pdf $RUN/records.jsonl: lies inside the run directory"
[ "$(sha256sum "$RUN/records.jsonl")" = "$sum0" ] || fail "--pdf changed records.jsonl"
mkdir "$TMP/adir"; mkfifo "$TMP/afifo"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$TMP/adir"
expect_out "is a directory; name a file"
[ -d "$TMP/adir" ] || fail "--pdf removed a directory"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --html "$TMP/afifo"
expect_out "--html $TMP/afifo: exists and is not a regular file"
[ -p "$TMP/afifo" ] || fail "--html replaced a FIFO"
STALE=$TMP/stale; cp -r "$RUN" "$STALE"; rm "$STALE/report.html"; mkdir "$STALE/report.html"
expect_rc 2 "$CB_BIN" report "$STALE" --spec "$STALE/spec.json" --html "$TMP/stale.html"
expect_out "--html: report.html could not be written in $STALE"
[ ! -e "$TMP/stale.html" ] || fail "--html copied something although report.html was not written"
ok "--html/--pdf refuse run files, directories, FIFOs and an unwritten report (exit 2)"

# Charts: the fixture has all_reduce busbw (5 sizes), dataloader (4 hosts x 4 worker counts),
# STREAM (4 nodes), GEMM (32 GPUs, spec line 600), HBM (32), host copies (32 x h2d/d2h),
# fio bandwidth + IOPS (4 nodes each), all_reduce algbw (5).
py '
import re
s = open(sys.argv[1]).read()
assert "<script" not in s.lower(), "report.html must hold no script"
for bad in re.findall(r"(?:src|href)\s*=\s*[\x27\"]([^\x27\"#][^\x27\"]*)", s):
    raise AssertionError("external reference " + bad)
figs = re.findall(r"(<figure class=\"chart\".*?</figure>)", s, re.S)
got = []
for fig in figs:
    rec = int(re.search(r"data-records=\"(\d+)\"", fig).group(1))
    ns = int(re.search(r"data-series=\"(\d+)\"", fig).group(1))
    kind = re.search(r"data-kind=\"(\w+)\"", fig).group(1)
    title = re.search(r"<figcaption>(.*?) \(", fig).group(1)
    assert "<svg" in fig, title + ": no svg"
    parts = re.split(r"<g id=\"gnuplot_plot_(\d+)\"", fig)
    marks = 0
    for i in range(1, len(parts), 2):
        if int(parts[i]) > ns:
            continue  # spec lines come after the data series
        body = parts[i + 1].split("<g id=\"gnuplot_plot_")[0]
        # minus 1: the legend sample of the series
        marks += (body.count("<polygon") if kind == "bars" else body.count("#gpPt6")) - 1
    assert marks == rec, "%s: %d marks for %d records" % (title, marks, rec)
    got.append((title, rec, kind))
want = [("Collectives: bus bandwidth against message size", 5, "lines"),
        ("Dataloader: samples/s against workers", 16, "lines"),
        ("compute.memory_bandwidth bandwidth per node", 4, "bars"),
        ("compute.gemm tflops per GPU", 32, "bars"),
        ("compute.gpu_memory_bandwidth bandwidth per GPU", 32, "bars"),
        ("compute.host_device_copy bandwidth per GPU", 64, "bars"),
        ("io.fio bandwidth per node", 4, "bars"),
        ("io.fio iops per node", 4, "bars"),
        ("collectives.all_reduce algbw", 5, "bars")]
assert got == want, got
assert re.search(r"spec gemm.bf16 \(dtype=bf16\) (>|&gt;)= 600 TFLOP/s", s)
assert s.count("<pre class=\"failing-hosts\">node02\nnode03\nnode04\n</pre>") == 1
for src in ("test fixture (tests/fixtures/results/make_report_fixtures.py)", "535.161.08"):
    assert src in s, src
' "$RUN/report.html"
ok "9 charts, one mark per record, spec line, fleet, environment and spec sources"

# --pdf without Chromium on PATH says so and exits 2.
NOCHROME=$TMP/bin; mkdir -p "$NOCHROME"
ln -s "$(command -v gnuplot)" "$NOCHROME/gnuplot"  # keep the charts: report.html is rewritten
expect_rc 2 env PATH="$NOCHROME" "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$TMP/r.pdf"
expect_out "--pdf needs Chromium: none of chromium, chromium-browser, google-chrome is on PATH"
ok "--pdf without Chromium: exit 2 with the reason"

CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
  echo "note: Chromium not installed: the in-browser checks are skipped (structure checked above)"
  echo "PASS: $PASSES checks"; exit 0
fi
# Load a copy with a probe script that records errors and measures every chart's SVG.
python3 - "$RUN/report.html" "$TMP/probe.html" <<'PY'
import sys
s = open(sys.argv[1]).read()
probe = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
const ce = console.error; console.error = (...a) => { window.__errors.push(a.join(' ')); ce(...a); };
window.addEventListener('load', () => {
  const boxes = [...document.querySelectorAll('figure.chart svg')].map(s => {
    const r = s.getBoundingClientRect(); return [s.closest('figure').id, r.width, r.height]; });
  const res = performance.getEntriesByType('resource').map(e => e.name);
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({errors: window.__errors, boxes: boxes, resources: res});
  document.body.appendChild(out);
});
</script>"""
open(sys.argv[2], "w").write(s.replace("<head>", "<head>\n" + probe, 1))
PY
timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-dev-shm-usage --no-first-run --enable-logging=stderr --v=0 \
  --dump-dom "file://$TMP/probe.html" >"$TMP/dom.html" 2>"$TMP/chrome.err" \
  || { tail -5 "$TMP/chrome.err"; fail "chromium --dump-dom failed"; }
py '
import re, html
dom = open(sys.argv[1]).read()
m = re.search(r"<pre id=\"probe\">(.*?)</pre>", dom, re.S)
assert m, "probe output missing from the DOM"
p = json.loads(html.unescape(m.group(1)))
assert p["errors"] == [], p["errors"]
assert p["resources"] == [], p["resources"]
assert len(p["boxes"]) == 9, p["boxes"]
for fid, w, h in p["boxes"]:
    assert w > 100 and h > 50, (fid, w, h)
err = open(sys.argv[2]).read()
assert "Uncaught" not in err and "CONSOLE" not in err, err[-2000:]
' "$TMP/dom.html" "$TMP/chrome.err"
ok "headless Chromium: no console errors, no resource loads, 9 chart SVGs with non-zero boxes"

expect_rc 0 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$TMP/r.pdf"
head -c 5 "$TMP/r.pdf" | grep -q '%PDF-' || fail "--pdf did not write a PDF"
ok "--pdf prints report.html to PDF ($(stat -c %s "$TMP/r.pdf") bytes)"

# A run directory whose name holds URL syntax ('#', '%', '?') still prints (file:// URL encoded).
ODD="$TMP/run #1 %41?x"
cp -r "$RUN" "$ODD"
expect_rc 0 "$CB_BIN" report "$ODD" --spec "$ODD/spec.json" --pdf "$TMP/odd.pdf"
head -c 5 "$TMP/odd.pdf" | grep -q '%PDF-' || fail "--pdf from '$ODD' did not write a PDF"
ok "--pdf from a directory named with '#', '%' and '?'"
echo "PASS: $PASSES checks"
