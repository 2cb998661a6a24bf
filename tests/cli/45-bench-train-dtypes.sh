# mgpu-bench train --dtypes: every configuration once per dtype, labelled
# with it, each run's command asking mgpu-train for it, speedup against the
# 1-rank row of the same dtype, the bf16 memory estimate by hand (its extra
# over fp32 what mgpu-train's peak grows by), the Dtype column of the
# Markdown memory table, --save / --compare by label (a table saved before
# the dtype column reads each row's dtype from its command), and the usage
# errors. Timings are never asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
# windows of 9 bytes of text as 1 x 9 IDX "images" (ctx 8)
text_idx d 256 16 9 1 "the quick brown fox jumps over a lazy dog. " 50
# L 1, H 2, D 16, T 8, V 256: N = 256*16 + 8*16 + 12*256 + 13*16 + 2*16 = 7536.
# bf16 adds 2 bytes x (N + B T (4D + max(4D, V))) per rank, B 4:
# 2 * (7536 + 32 * (64 + 256)) = 35552.
w="--data d --model gpt:layers=1,heads=2,dim=16,ctx=8 --optimizer adamw --max-steps 6 --batch-size 4"
"$B" train --cpu-ranks 1,2 --modes ddp --dtypes fp32,bf16 --repeat 1 --warmup-steps 2 \
	--save s.tsv -- $w >out.tsv 2>err.txt || fail "sweep: $(cat err.txt)"
python3 - out.tsv <<'PY' || fail "table: $(cat out.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert [r["config"] for r in rows] == ["1 CPU rank (fp32)", "1 CPU rank (bf16)",
    "2 CPU ranks (DDP, fp32)", "2 CPU ranks (DDP, bf16)"], [r["config"] for r in rows]
base = {}
for r in rows:
    d, n, thr = r["dtype"], int(r["devices"]), float(r["samples_per_s"])
    assert r["status"] == "ok" and thr > 0 and float(r["tokens_per_s"]) > 0, r
    assert r["command"].count("--dtype") == 1 and ("--dtype " + d) in r["command"], r
    base.setdefault(d, thr)
    assert abs(float(r["speedup"]) - thr / base[d]) < 1e-3 * thr / base[d], (r, base)
    est = int(r["mem_estimate_bytes"])
    for peak in map(int, r["peak_bytes"].split(",")):
        assert est / 1.5 <= peak <= 1.5 * est, (peak, est)
for fp, bf in ((rows[0], rows[1]), (rows[2], rows[3])):
    extra = int(bf["mem_estimate_bytes"]) - int(fp["mem_estimate_bytes"])
    assert extra == 35552, extra
    grew = int(bf["peak_bytes"].split(",")[0]) - int(fp["peak_bytes"].split(",")[0])
    assert abs(grew - extra) <= 0.05 * extra, (grew, extra)
PY

# Markdown: the labels, and a Dtype column in the memory table
"$B" train -q --cpu-ranks 1 --dtypes bf16,fp32 --repeat 1 --warmup-steps 2 --format markdown \
	-- $w >out.md || fail "markdown sweep"
grep -q '^| 1 CPU rank (bf16) ' out.md && grep -q '^| 1 CPU rank (fp32) ' out.md &&
	grep -q '^| Devices | Mode | Dtype | Estimate (MiB) | dev 0 (MiB) |' out.md &&
	grep -q '^|  *1 | -  *| bf16  |' out.md && grep -q 'bf16: + the bf16 copies' out.md ||
	fail "markdown: $(cat out.md)"

# --compare matches rows by label, dtype included; a table saved before the
# dtype column existed reads each row's dtype from its command.
awk -F '\t' 'BEGIN { OFS = "\t" } NR > 1 { $8 = $8 / 1000 } { print }' s.tsv >slow.tsv
"$B" train --compare slow.tsv --tolerance 95% --repeat 1 -o new.tsv 2>err.txt ||
	fail "compare: $(cat err.txt)"
cut -f1 new.tsv | tail -n +2 | tr '\n' ';' | grep -qx \
	'1 CPU rank (fp32);1 CPU rank (bf16);2 CPU ranks (DDP, fp32);2 CPU ranks (DDP, bf16);' ||
	fail "compare rows: $(cat new.tsv)"
python3 - slow.tsv old.tsv <<'PY' || fail "old table"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cols = [c for c in rows[0] if c != "dtype"]
with open(sys.argv[2], "w", newline="") as f:
    out = csv.DictWriter(f, cols, delimiter="\t", extrasaction="ignore", lineterminator="\n")
    out.writeheader()
    out.writerows(rows)
PY
"$B" train --compare old.tsv --tolerance 95% --repeat 1 -o again.tsv 2>err.txt ||
	fail "old table: $(cat err.txt)"
python3 - again.tsv <<'PY' || fail "old table's dtypes: $(cat again.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert [r["dtype"] for r in rows] == ["fp32", "bf16", "fp32", "bf16"], rows
assert rows[3]["speedup"] != "NA" and rows[3]["status"] == "ok", rows[3]
PY

# usage errors
msg="--dtypes sets mgpu-train's --dtype of each run: give it, or --dtype after --, not both"
expect 2 "$msg" "$B" train --dtypes fp32,bf16 -- --dtype bf16
expect 2 "$msg" "$B" train --dtypes bf16 -- $w --dtype=fp32
expect 2 "$msg" "$B" train --dtypes bf16 -- --dt fp32
expect 2 "--dtypes: 'fp8'" "$B" train --dtypes fp32,fp8
expect 2 "--dtypes: 'bf16' given twice" "$B" train --dtypes bf16,bf16
expect 2 "--compare re-runs the configurations of its file" "$B" train --compare s.tsv \
	--dtypes bf16
exit 0
