# mgpu-bench: the shared contract (help, version, usage errors exit 2 with
# "Try", the man page lints) and every bad flag of each subcommand.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
"$B" --help | grep -q '^usage: mgpu-bench' || fail "--help"
for c in train allreduce data; do
	"$B" $c --help | grep -q "^usage: mgpu-bench $c" || fail "$c --help"
	"$B" $c -h >/dev/null || fail "$c -h"
done
for c in train allreduce data; do "$B" $c --help >help-$c.txt; done
help_man_agree mgpu-bench.1 help-train.txt help-allreduce.txt help-data.txt
grep -q '^  --repeat N  *runs per configuration; median and spread \[3\]$' help-train.txt ||
	fail "train --help lacks --repeat's default"
"$B" --version | grep -q '^mgpu-bench [0-9]' || fail "--version"
"$B" -vV | grep -q '^features:' || fail "-vV"
"$B" train -V | grep -q '^mgpu-bench ' || fail "train -V"
expect 2 "missing command" "$B"
expect 2 "unknown command 'bogus'" "$B" bogus
expect 2 "unknown option '--nope' before the command" "$B" --nope train
for c in train allreduce data; do
	expect 2 "unknown or incomplete option '--nope'" "$B" $c --nope
	expect 2 "--format: 'yaml'" "$B" $c --format yaml
	expect 2 "--json and --format tsv: choose one" "$B" $c --json --format tsv
done
# train
expect 2 "--repeat: 0 is out of range" "$B" train --repeat 0
expect 2 "--cpu-ranks" "$B" train --cpu-ranks 1x
expect 2 "--cpu-ranks: 0 is out of range" "$B" train --cpu-ranks 0,2
expect 2 "--devices" "$B" train --devices ,
expect 2 "--modes: 'zero'" "$B" train --modes ddp,zero
expect 2 "--modes: 'dp' given twice" "$B" train --modes dp,dp
expect 2 "--sync-backends: 'tcp'" "$B" train --sync-backends cpu,tcp
expect 2 "--warmup-steps: -1 is out of range" "$B" train --warmup-steps -1
expect 2 "--timeout: 0 is out of range" "$B" train --timeout 0
expect 2 "--tolerance: 'ten'" "$B" train --tolerance ten
expect 2 "--tolerance: 150% is out of range" "$B" train --tolerance 150%
expect 2 "unexpected argument 'extra' (mgpu-train options go after --)" "$B" train extra
expect 2 "--compare re-runs the configurations of its file" "$B" train --compare x.tsv --cpu-ranks 2
expect 1 "'missing.tsv'" "$B" train --compare missing.tsv
printf 'a\tb\n1\t2\n' >bad.tsv
expect 1 "'bad.tsv': not an mgpu-bench train table" "$B" train --compare bad.tsv
# allreduce
expect 2 "--ranks: 0 is out of range" "$B" allreduce --ranks 0
expect 2 "--ranks: 65 is out of range" "$B" allreduce --ranks 65
expect 2 "--sizes: 6 is not a positive multiple of 4 bytes" "$B" allreduce --sizes 6:64
expect 2 "--sizes: '8K:4K': the upper size is below the lower" "$B" allreduce --sizes 8K:4K
expect 2 "--sizes: '4Q' is not a size" "$B" allreduce --sizes 4Q
expect 2 "--backends: 'gloo'" "$B" allreduce --backends cpu,gloo
expect 2 "--iters: 'many'" "$B" allreduce --iters many
expect 2 "unexpected argument 'x'" "$B" allreduce x
# data
expect 2 "--prefetch: 65 is out of range" "$B" data --prefetch 1,65
expect 2 "--batch-size: 0 is out of range" "$B" data --batch-size 0
expect 2 "--cache-budget: '1X' is not a size" "$B" data --cache-budget 1X
expect 2 "unexpected argument 'b' (one PATH)" "$B" data a b
expect 1 "'nowhere'" "$B" data nowhere
# the man page
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-bench.1" >lint.txt 2>&1 || fail "mandoc: $(cat lint.txt)"
fi
# a closed pipe ends quietly
rc=$(closed_pipe "$B" allreduce --sizes 4K --iters 1 --ranks 1)
[ ! -s err.txt ] || fail "closed pipe: $(cat err.txt)"
[ "$rc" = 141 ] || fail "closed pipe: exit $rc, want 141 (SIGPIPE)"
exit 0
