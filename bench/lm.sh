#!/bin/sh
# lm.sh BUILD - the byte-level gpt on CPU ranks, mgpu against PyTorch's own
# implementation of the same model (bench/torch_gpt.py), 1 and 2 ranks
# (PyTorch: DDP over gloo), one thread per rank for both, same shapes,
# AdamW and per-rank batch. `make bench-torch` runs it.
#
# Data: Debian's fortunes (`make deps`) cut into samples of ctx+1 bytes by
# mgpu-shard --text. PyTorch comes from a virtual environment under BUILD
# (torch-venv), made with pip from PyPI when it is missing; without a
# network that part is skipped, saying why, and the mgpu rows still run.
#
# Environment: LM_MODELS (space-separated specs), LM_BATCH (per rank),
# LM_STEPS, LM_WARMUP, LM_REPEAT, LM_TEXT (the corpus files).
set -eu
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
SRC=$(cd "$(dirname "$0")/.." && pwd)
MODELS=${LM_MODELS:-"gpt:layers=2,heads=4,dim=64,ctx=64 gpt:layers=2,heads=4,dim=128,ctx=64 gpt:layers=4,heads=4,dim=256,ctx=128"}
BATCH=${LM_BATCH:-8}
STEPS=${LM_STEPS:-40}
WARMUP=${LM_WARMUP:-10}
REPEAT=${LM_REPEAT:-3}
TEXT=${LM_TEXT:-"/usr/share/games/fortunes/fortunes /usr/share/games/fortunes/literature /usr/share/games/fortunes/riddles"}
VENV=$B/torch-venv
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

. "$SRC/bench/torch_venv.sh" # torch_python

# cpu_secs CMD...: the user + system CPU seconds CMD and every process it
# started used (what a loaded machine cannot inflate, unlike wall time).
cpu_secs() {
	python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)' "$@"
}

# cpu_per_step NAME RANKS CMD...: CPU seconds per training step of CMD, as
# the difference of a run of LM_STEPS steps and one of LM_WARMUP (CMD ends
# with the option that takes the step count), so start-up, data set-up and
# evaluation cancel out; printed as a table row with tokens per CPU second.
cpu_per_step() {
	name=$1 ranks=$2
	shift 2
	long=$(cpu_secs "$@" "$STEPS") && short=$(cpu_secs "$@" "$WARMUP") ||
		{ echo "| $name | failed | |"; return 0; }
	awk -v n="$name" -v a="$long" -v b="$short" -v s="$((STEPS - WARMUP))" \
		-v tok="$((ranks * BATCH * ctx))" 'BEGIN { c = (a - b) / s
		printf "| %s | %.4f | %.0f |\n", n, c, (c > 0 ? tok / c : 0) }'
}

for f in $TEXT; do
	[ -r "$f" ] || { echo "lm.sh: '$f' missing: run make deps (fortunes-min)" >&2; exit 1; }
done
PYT=$(torch_python) || PYT=
for spec in $MODELS; do
	ctx=${spec##*ctx=}
	ctx=${ctx%%,*}
	[ -d "$W/ctx$ctx" ] || "$B/bin/mgpu-shard" -q --text --context "$ctx" --val-fraction 0.01 \
		-o "$W/ctx$ctx/manifest.tsv" $TEXT
	"$B/bin/mgpu-cache" -q -o "$W/ctx$ctx/cache" "$W/ctx$ctx/manifest.tsv" >/dev/null
	echo "# $spec, batch $BATCH per rank, AdamW, $STEPS steps ($WARMUP left out), median of $REPEAT"
	echo "## mgpu (mgpu-bench train)"
	"$B/bin/mgpu-bench" train -q --cpu-ranks 1,2 --modes ddp --repeat "$REPEAT" \
		--warmup-steps "$WARMUP" --format markdown -- --data "$W/ctx$ctx/cache" \
		--model "$spec" --optimizer adamw --lr 3e-4 --batch-size "$BATCH" \
		--max-steps "$STEPS" | sed '/^Commands:/,$d'
	echo "## PyTorch (bench/torch_gpt.py, median of $REPEAT; CPU time of the timed steps, all ranks)"
	[ -n "$PYT" ] || echo "skipped: no PyTorch (see above)"
	best=
	for r in $(seq "$REPEAT"); do
		[ -n "$PYT" ] || break
		"$PYT" "$SRC/bench/torch_gpt.py" --model "$spec" --batch-size "$BATCH" \
			--steps "$STEPS" --warmup-steps "$WARMUP" --ranks 1,2 >"$W/t$r.tsv" 2>"$W/err"
		best="$best $W/t$r.tsv"
	done
	# each configuration's median over the runs, as mgpu-bench reports its rows
	# shellcheck disable=SC2086
	[ -z "$best" ] || awk -F '\t' 'function med(s,   a, m, x, y, t) { m = split(s, a, " ")
			for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++)
				if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
			return a[int((m + 1) / 2)] }
		FNR == 1 { next }
		{ tok[$1] = tok[$1] " " $3; cpu[$1] = cpu[$1] " " $8; if (!($1 in o)) o[$1] = k++ }
		END { print "| Configuration | Tokens/s | Tokens per CPU s |"; print "|---|---:|---:|"
		      for (c in o) keys[o[c]] = c
		      for (i = 0; i < k; i++)
			printf "| %s | %.0f | %.0f |\n", keys[i], med(tok[keys[i]]), med(cpu[keys[i]]) }' $best
	[ -z "$best" ] || tail -n 1 "$W/err"
	echo "## mgpu: CPU seconds per step (all ranks; a run of $STEPS steps minus one of $WARMUP)"
	echo "| Configuration | CPU s/step | Tokens per CPU s |"
	echo "|---|---:|---:|"
	for r in 1 2; do
		cpu_per_step "mgpu $r CPU rank(s)" "$r" "$B/bin/mgpu-train" -q --data "$W/ctx$ctx/cache" \
			--model "$spec" --optimizer adamw --lr 3e-4 --batch-size "$BATCH" \
			--cpu-ranks "$r" --log-every 1000 --max-steps
	done
done
