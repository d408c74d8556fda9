#!/usr/bin/env bash
# report.html on the fleet fixture (4 nodes x 8 GPUs): gnuplot charts with one mark per record,
# self-contained (no script, no external resource), and loaded in headless Chromium (required:
# scripts/setup.sh installs it): no console errors, every chart a picture, the first screen shows
# the verdict and the failing GPU, screenshots kept in test-output/, --pdf prints a PDF.
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
# Issue 46: another run's own files are never replaced (`report runB --html runA/records.jsonl`
# turned runA's records into HTML), nor any existing file that is not an earlier output of the
# option, unless --force; an earlier report.html outside a run directory is replaced.
OTHER=$TMP/other; cp -r "$RUN" "$OTHER"
sumo=$(sha256sum "$OTHER/records.jsonl")
for opt in --html --prometheus; do
  expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" $opt "$OTHER/records.jsonl" --force
  expect_out "$opt $OTHER/records.jsonl: is a file of the run directory $OTHER \(run.json beside it\)"
done
[ "$(sha256sum "$OTHER/records.jsonl")" = "$sumo" ] || fail "another run's records.jsonl changed"
echo "my notes" >"$TMP/notes.txt"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --html "$TMP/notes.txt"
expect_out "--html $TMP/notes.txt: exists and is not an earlier --html output; name a new file, or pass --force"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --prometheus "$TMP/notes.txt"
expect_out "--prometheus $TMP/notes.txt: exists and is not an earlier --prometheus output"
[ "$(cat "$TMP/notes.txt")" = "my notes" ] || fail "a file that is no earlier output was replaced"
expect_rc 0 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --html "$TMP/copy.html"
expect_rc 0 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --html "$TMP/notes.txt" --force
cmp -s "$RUN/report.html" "$TMP/notes.txt" || fail "--force did not replace the file"
ok "--html/--prometheus: never another run's file; another existing file only with --force"
# A symbolic link is refused, not replaced by the rename (/dev/stdout is one for the whole
# machine); so is the spec table being judged against, and an empty path.
echo keep >"$TMP/target.txt"; ln -s "$TMP/target.txt" "$TMP/link"
for opt in --pdf --html --prometheus; do
  expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" $opt "$TMP/link"
  expect_out "$opt $TMP/link: is a symbolic link \\(to $TMP/target.txt\\); name the file itself"
  [ -L "$TMP/link" ] && [ "$(cat "$TMP/target.txt")" = keep ] || fail "$opt replaced a symbolic link or its file"
done
cp "$RUN/spec.json" "$TMP/table.json"; sum1=$(sha256sum "$TMP/table.json")
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$TMP/table.json" --pdf "$TMP/table.json"
expect_out "--pdf $TMP/table.json: exists and is not an earlier --pdf output"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$TMP/table.json" --pdf "$TMP/table.json" --force
expect_out "--pdf $TMP/table.json: is the spec table $TMP/table.json the report is judged against"
[ "$(sha256sum "$TMP/table.json")" = "$sum1" ] || fail "--pdf overwrote the spec table"
expect_rc 2 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf ""
expect_out "--pdf: empty value; name it, or leave the option out"
ok "--html/--pdf refuse run files, directories, FIFOs, symbolic links, the spec table, an empty path and an unwritten report (exit 2)"

# Charts: few and chosen. The fixture has one GPU row (BF16 GEMM, 32 GPUs: a heatmap), STREAM
# triad (a bar group, 4 nodes), all_reduce busbw (5 sizes, log-log), the dataloader (4 hosts x 4
# worker counts) and the fio row (4 nodes, a bar chart of its own); HBM and host-copy records
# have no row and no chart.
py '
import re, html
s = open(sys.argv[1]).read()
assert "<script" not in s.lower(), "report.html must hold no script"
for bad in re.findall(r"(?:src|href)\s*=\s*[\x27\"]([^\x27\"#][^\x27\"]*)", s):
    raise AssertionError("external reference " + bad)
figs = re.findall(r"(<figure class=\"chart\".*?</figure>)", s, re.S)
got = []
for fig in figs:
    rec = int(re.search(r"data-records=\"(\d+)\"", fig).group(1))
    ns = int(re.search(r"data-series=\"(\d+)\"", fig).group(1))
    kind = re.search(r"data-kind=\"([\w-]+)\"", fig).group(1)
    title = html.unescape(re.search(r"<figcaption>(.*?) \(\d+ records", fig).group(1))
    assert "<svg" in fig, title + ": no svg"
    parts = re.split(r"<g id=\"gnuplot_plot_(\d+)\"", fig)
    marks = 0
    for i in range(1, len(parts), 2):
        body = parts[i + 1].split("<g id=\"gnuplot_plot_")[0]
        if kind == "heatmap":  # plot 1: one filled box per GPU, no legend sample
            marks += body.count("<polygon") if parts[i] == "1" else 0
        elif int(parts[i]) <= ns:  # spec lines come after the data series
            # minus 1: the legend sample of the series
            marks += (body.count("<polygon") if kind in ("bars", "groups") else body.count("#gpPt6")) - 1
    assert marks == rec, "%s: %d marks for %d records" % (title, marks, rec)
    got.append((title, rec, kind))
want = [("gemm.bf16: Each GPU\x27s BF16 GEMM >= 600 TFLOP/s", 32, "heatmap"),
        ("Host memory bandwidth (STREAM) per kernel and node", 4, "groups"),
        ("Collectives: bus bandwidth against message size (backend=nccl, 4 nodes)", 5, "lines"),
        ("Dataloader: samples/s against workers", 16, "lines"),
        ("io.seq_read: fio sequential read >= 5 GB/s per node", 4, "bars")]
assert got == want, got
assert "spec threshold of each group" in s
assert re.search(r"% of the threshold (>|&gt;)= 600 TFLOP/s", s)
assert "the seed&apos;s DataLoader: 8 workers" in s or "the seed\x27s DataLoader: 8 workers" in s
assert s.count("<pre class=\"suspect-hosts\">node02\nnode03\nnode04\n</pre>") == 1
for src in ("test fixture (tests/fixtures/results/make_report_fixtures.py)", "535.161.08"):
    assert src in s, src
' "$RUN/report.html"
ok "5 charts: the GPU row as a heatmap, bar groups, log-log busbw, one mark per record"

# --pdf without Chromium on PATH says so and exits 2.
NOCHROME=$TMP/bin; mkdir -p "$NOCHROME"
ln -s "$(command -v gnuplot)" "$NOCHROME/gnuplot"  # keep the charts: report.html is rewritten
expect_rc 2 env PATH="$NOCHROME" "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$TMP/r.pdf"
expect_out "--pdf needs Chromium: none of chromium, chromium-browser, google-chrome is on PATH"
ok "--pdf without Chromium: exit 2 with the reason"

CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || fail "Chromium is not installed (scripts/setup.sh installs it: apt-get install chromium)"

# The fleet with one failing GPU (node02 GPU3 at 560 TFLOP/s, below the row's 600), looked at as
# a person does: a screenshot of the first screen (kept under test-output/), and through the DOM
# that every chart is a picture and the first screen shows the verdict and the failing GPU's
# host, index and bus id.
FAILRUN=$TMP/fleet-fail
cp -r "$CB_FIXTURES/results/fleet-4x8" "$FAILRUN"
python3 - "$FAILRUN/records.jsonl" <<'PY'
import json, sys
out, n = [], 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("benchmark") == "compute.gemm" and r["scope"].get("host") == "node02" \
            and r["scope"].get("gpu_index") == 3:
        for m in r["metrics"]:
            if m["name"] == "tflops":
                m["value"], n = 560.0, n + 1
    out.append(json.dumps(r, separators=(",", ":")))
assert n == 1, n
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
expect_rc 1 "$CB_BIN" report "$FAILRUN" --spec "$FAILRUN/spec.json"
SHOTS=${CB_BINARY_DIR:-$TMP}/test-output/reports_html
mkdir -p "$SHOTS"
# Load a copy with a probe script that records errors, measures every chart's SVG and collects
# the text drawn in the first screen (1280 x 900).
python3 - "$FAILRUN/report.html" "$TMP/probe.html" <<'PY'
import sys
s = open(sys.argv[1]).read()
probe = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message)));
const ce = console.error; console.error = (...a) => { window.__errors.push(a.join(' ')); ce(...a); };
window.addEventListener('load', () => {
  const charts = [...document.querySelectorAll('figure.chart')].map(f => {
    const s = f.querySelector('svg'); if (!s) return [f.id, 0, 0, 0];
    const r = s.getBoundingClientRect();
    return [f.id, r.width, r.height, s.querySelectorAll('path, polygon, rect, circle, use').length]; });
  const first = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const range = document.createRange(); range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.height > 0 && r.top < window.innerHeight && r.bottom > 0) first.push(n.textContent);
  }
  const res = performance.getEntriesByType('resource').map(e => e.name);
  // Text drawn over other text in a chart (a tic label under the legend, a label on a label).
  const overlaps = [];
  for (const f of document.querySelectorAll('figure.chart')) {
    const boxes = [...f.querySelectorAll('svg text')].map(t => [t.textContent.trim(),
      t.getBoundingClientRect()]).filter(b => b[0] && b[1].width > 0 && b[1].height > 0);
    for (let i = 0; i < boxes.length; ++i)
      for (let j = i + 1; j < boxes.length; ++j) {
        const a = boxes[i][1], b = boxes[j][1];
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 2 && h > 2) overlaps.push([f.id, boxes[i][0], boxes[j][0]]);
      }
  }
  const out = document.createElement('pre'); out.id = 'probe';
  out.textContent = JSON.stringify({errors: window.__errors, charts: charts, resources: res,
                                    first: first.join(' '), height: window.innerHeight,
                                    width: window.innerWidth, overlaps: overlaps,
                                    scroll_width: document.documentElement.scrollWidth});
  document.body.appendChild(out);
});
</script>"""
open(sys.argv[2], "w").write(s.replace("<head>", "<head>\n" + probe, 1))
PY
CHROME_FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking
  --disable-dev-shm-usage --no-first-run --hide-scrollbars --window-size=1280,900)
timeout 90 "$CHROME" "${CHROME_FLAGS[@]}" --enable-logging=stderr --v=0 \
  --dump-dom "file://$TMP/probe.html" >"$TMP/dom.html" 2>"$TMP/chrome.err" \
  || { tail -5 "$TMP/chrome.err"; fail "chromium --dump-dom failed"; }
timeout 90 "$CHROME" "${CHROME_FLAGS[@]}" --screenshot="$SHOTS/first-screen.png" \
  "file://$FAILRUN/report.html" >/dev/null 2>&1 || fail "chromium --screenshot failed"
timeout 90 "$CHROME" "${CHROME_FLAGS[@]/--window-size=1280,900/--window-size=1280,6000}" \
  --screenshot="$SHOTS/whole-report.png" "file://$FAILRUN/report.html" >/dev/null 2>&1 \
  || fail "chromium --screenshot of the whole report failed"
head -c 8 "$SHOTS/first-screen.png" | grep -q PNG || fail "no PNG screenshot"
py '
import re, html
dom = open(sys.argv[1]).read()
m = re.search(r"<pre id=\"probe\">(.*?)</pre>", dom, re.S)
assert m, "probe output missing from the DOM"
p = json.loads(html.unescape(m.group(1)))
assert p["errors"] == [], p["errors"]
assert p["resources"] == [], p["resources"]
assert len(p["charts"]) == 5, p["charts"]
for fid, w, h, shapes in p["charts"]:
    assert w > 100 and h > 50 and shapes >= 10, (fid, w, h, shapes)
first = " ".join(p["first"].split())
assert p["height"] >= 600, p["height"]  # the viewport Chromium gives a 1280x900 window
# The page fits the window: nothing scrolls sideways at 1,280 px; no chart text on other text.
assert p["scroll_width"] <= p["width"] <= 1280, (p["scroll_width"], p["width"])
assert p["overlaps"] == [], p["overlaps"][:20]
assert "Verdict: FAIL" in first, first
assert "Cluster acceptance report" not in first, first  # the cover is for print only
for want in ("node02 GPU3", "00000000:61:00.0", "560 TFLOP/s"):
    assert want in first, (want, first)
err = open(sys.argv[2]).read()
assert "Uncaught" not in err and "CONSOLE" not in err, err[-2000:]
' "$TMP/dom.html" "$TMP/chrome.err"
ok "headless Chromium: no errors or loads, 5 chart pictures, the page fits 1,280 px, no chart text over other text, the first screen shows the verdict and node02 GPU3 (00000000:61:00.0); screenshots: $SHOTS/first-screen.png, $SHOTS/whole-report.png"

expect_rc 0 "$CB_BIN" report "$RUN" --spec "$RUN/spec.json" --pdf "$TMP/r.pdf"
head -c 5 "$TMP/r.pdf" | grep -q '%PDF-' || fail "--pdf did not write a PDF"
ok "--pdf prints report.html to PDF ($(stat -c %s "$TMP/r.pdf") bytes)"
# The PDF opens with its cover page (print only: the screen shows the report at once).
command -v pdftotext >/dev/null || fail "pdftotext is not installed (scripts/setup.sh installs poppler-utils)"
pdftotext -f 1 -l 1 "$TMP/r.pdf" "$TMP/page1.txt" && pdftotext -f 2 -l 2 "$TMP/r.pdf" "$TMP/page2.txt" \
  || fail "pdftotext could not read the PDF"
SHA=$(sha256sum "$RUN/spec.json" | cut -d' ' -f1)
py '
p1 = " ".join(open(sys.argv[1]).read().split())
p2 = open(sys.argv[2]).read()
for want in ("Cluster acceptance report", "Verdict: PASS", "4 nodes: node01, node02, node03, node04",
             "32 GPUs: 32 x NVIDIA H100 80GB HBM3", "2026-11-30T08:45:00Z to 2026-11-30T08:55:00Z",
             "sha256 " + sys.argv[3], "0.1.0-3f2a9c1d7e0b", "1654123000203", "1654123000407"):
    assert want in p1, (want, p1)
assert "Verdicts" not in p1, p1  # the cover is a page of its own
assert p2.lstrip().startswith("clusterbench report: fleet-fixture"), p2[:200]
' "$TMP/page1.txt" "$TMP/page2.txt" "$SHA"
ok "the PDF opens with a cover: cluster, dates, spec table and sha256, version, GPU serials"

# A run directory whose name holds URL syntax ('#', '%', '?') still prints (file:// URL encoded).
ODD="$TMP/run #1 %41?x"
cp -r "$RUN" "$ODD"
expect_rc 0 "$CB_BIN" report "$ODD" --spec "$ODD/spec.json" --pdf "$TMP/odd.pdf"
head -c 5 "$TMP/odd.pdf" | grep -q '%PDF-' || fail "--pdf from '$ODD' did not write a PDF"
ok "--pdf from a directory named with '#', '%' and '?'"
echo "PASS: $PASSES checks"
