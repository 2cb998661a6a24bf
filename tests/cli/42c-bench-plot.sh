# mgpu-bench train --plot: the SVG, parsed as XML (and rendered by
# rsvg-convert where it is installed), has a title naming the model, the
# data, the machine (the CPU model) and the repeats; a throughput panel
# beside speedup and memory; error bars where repeats differ; and every
# series in one colour in all panels (1-device configurations grey).
# Timings are never asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
mkidx d 1200 100 8 4
"$B" train --cpu-ranks 1,2 --modes ddp,dp --repeat 2 --warmup-steps 4 --plot p.svg -- \
	--data d --model mlp:64-16-4 --max-steps 24 --batch-size 16 >out.tsv 2>err.txt ||
	fail "sweep: $(cat err.txt)"
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
python3 - p.svg out.tsv "$cpu" <<'PY' || fail "plot: $(head -c 2000 p.svg)"
import csv, sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
texts = ["".join(t.itertext()) for t in root.iter(ns + "text")]
title = texts[0]
assert "mlp:64-16-4" in title and " on d;" in title and "median of 2 runs" in title, title
assert sys.argv[3] == "" or sys.argv[3] in title, (title, sys.argv[3])
assert "Throughput (samples/s)" in texts and "Speedup against devices" in texts, texts
assert "Peak memory per device" in texts, texts
# one colour per series, whatever the panel
colour = {}
panels = {}
for g in root.iter(ns + "g"):
    if g.get("class") != "series":
        continue
    name, c = g.get("data-series"), g.get("data-color")
    assert colour.setdefault(name, c) == c, (name, colour[name], c)
    panels[name] = panels.get(name, 0) + 1
    for el in g:
        paint = el.get("stroke") if el.tag == ns + "polyline" else el.get("fill")
        if el.tag == ns + "rect":
            assert paint == c, (name, paint, c)
        if el.tag == ns + "polyline":
            assert paint == c, (name, paint, c)
assert set(colour) == {"CPU ranks DDP, sync cpu", "CPU ranks DP, sync cpu", "1 device"}, colour
assert colour["1 device"] == "#7f7f7f" and len(set(colour.values())) == 3, colour
for s in ("CPU ranks DDP, sync cpu", "CPU ranks DP, sync cpu"):
    assert panels[s] == 3, (s, panels[s])  # speedup, throughput, memory
# error bars wherever the two runs of a row differ
rows = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
spread = sum(float(r["samples_per_s_min"]) < float(r["samples_per_s_max"]) for r in rows)
bars = [p for p in root.iter(ns + "path") if p.get("class") == "errbar"]
assert (len(bars) > 0) == (spread > 0), (len(bars), spread)
PY
if command -v rsvg-convert >/dev/null; then
	rsvg-convert -o p.png p.svg 2>err.txt || fail "rsvg-convert: $(cat err.txt)"
	[ -s p.png ] || fail "rsvg-convert wrote nothing"
fi
exit 0
