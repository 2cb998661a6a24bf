# mgpu-bench train with a gpt workload: tokens/s = samples/s x ctx, MFU =
# tokens/s x (6 N + 12 L T D) / (devices x the peak of one CPU core), the
# memory estimate by hand beside the measured peak (which it must track:
# within 1.5x either way), the Markdown columns and notes, and an mlp
# workload keeping these columns NA. Timings are never asserted.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
# windows of 17 bytes of text as 1 x 17 IDX "images" (ctx 16).
text_idx d 256 16 17 1 "the quick brown fox jumps over a lazy dog. " 50
# L 2, H 2, D 32, T 16, V 256: N = 256*32 + 16*32 + 2 * (12*1024 + 13*32) + 2*32
# = 34176 parameters, 33664 without wpe; 6 N + 12 L T D = 201984 + 12288.
model=gpt:layers=2,heads=2,dim=32,ctx=16
w="--data d --model $model --optimizer adamw --max-steps 8 --batch-size 4"
"$B" train --cpu-ranks 1,2 --modes ddp --repeat 1 --warmup-steps 2 -- $w >out.tsv 2>err.txt ||
	fail "sweep: $(cat err.txt)"
python3 - out.tsv <<'PY' || fail "table: $(cat out.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
assert [r["config"] for r in rows] == ["1 CPU rank", "2 CPU ranks (DDP)"], rows
for r in rows:
    n, sps = int(r["devices"]), float(r["samples_per_s"])
    assert r["ctx"] == "16" and abs(float(r["tokens_per_s"]) - 16 * sps) < 1e-4 * 16 * sps, r
    assert float(r["flops_per_token"]) == 201984 + 12288, r
    peak = float(r["peak_flops"])
    assert peak > 1e8 and "FLOP/cycle" in r["peak_how"], r
    mfu = float(r["tokens_per_s"]) * (201984 + 12288) / (n * peak)
    assert abs(float(r["mfu"]) - mfu) < 1e-3 * mfu and 0 < mfu < 1, r
    # by hand: gradients N + (weights + 2 AdamW slots) N / shared ranks, plus
    # 4 x 16 tokens x (2 x (16*32 + 2) + 2*32 + 256 + 11*32 + 4) activations
    # (per block 16 D and the attention rows' log-sum-exp, one per head; the
    # logits once, the backward's scratch, ids, targets and row statistics)
    share = n
    est = 4 * (34176 + 34176 * 3 / share +
               4 * 16 * (2 * (16 * 32 + 2) + 2 * 32 + 256 + 11 * 32 + 4))
    assert abs(int(r["mem_estimate_bytes"]) - est) <= 4, (r["mem_estimate_bytes"], est)
    for peak_bytes in map(int, r["peak_bytes"].split(",")):
        assert est / 1.5 <= peak_bytes <= 1.5 * est, (peak_bytes, est)
PY

# Markdown: Tokens/s and MFU beside the throughput, the estimate beside the
# measured peak, and what they mean.
"$B" train -q --cpu-ranks 1 --repeat 1 --warmup-steps 2 --format markdown -- $w >out.md ||
	fail "markdown sweep"
grep -q '| Tokens/s | MFU' out.md && grep -q '| Estimate (MiB) | dev 0 (MiB) |' out.md &&
	grep -q '6 N + 12 L T D = 2.143e+05' out.md && grep -q '^Peak of one CPU rank: 1 core x ' out.md ||
	fail "markdown: $(cat out.md)"

# An mlp has no tokens: the columns stay NA and the Markdown tables keep their shape.
mkidx m 256 16 8 4
"$B" train -q --cpu-ranks 1 --repeat 1 --warmup-steps 2 -- --data m --model mlp:64-16-4 \
	--max-steps 8 --batch-size 16 >mlp.tsv || fail "mlp sweep"
python3 - mlp.tsv <<'PY' || fail "mlp: $(cat mlp.tsv)"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))[0]
assert all(r[c] == "NA" for c in ("ctx", "tokens_per_s", "mfu", "mem_estimate_bytes")), r
PY
"$B" train -q --cpu-ranks 1 --repeat 1 --warmup-steps 2 --format markdown -- --data m \
	--model mlp:64-16-4 --max-steps 8 --batch-size 16 >mlp.md || fail "mlp markdown"
! grep -q 'Tokens/s\|Estimate' mlp.md || fail "mlp markdown has gpt columns: $(cat mlp.md)"
exit 0
