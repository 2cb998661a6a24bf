# mgpu-bench and what goes wrong in a sweep (issue 19): a run's usage error
# reaches the table and stderr as mgpu-train's reason, not its closing
# "Try 'mgpu-train --help'" line, in a sweep and in --compare; options
# that leave nothing to measure (--modes dp across --nodes, --dtypes ',',
# allreduce --backends ',') are usage errors before anything runs.
. tests/cli/lib.sh
mkidx d 300 30 8 4
B=$BIN/mgpu-bench
bad="--data d --model gpt:layers=1,heads=3,dim=32,ctx=32"

set +e
"$B" train --cpu-ranks 1 -- $bad >old.tsv 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "bad model: exit $rc: $(cat err.txt)"
grep -q "1 CPU rank: mgpu-train: --model: dim 32 is not a multiple of heads 3" err.txt ||
	fail "bad model: stderr lacks mgpu-train's reason: $(cat err.txt)"
grep -q "dim 32 is not a multiple of heads 3" old.tsv || fail "the table's error: $(cat old.tsv)"
set +e
"$B" train --compare old.tsv >new.tsv 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "--compare: exit $rc: $(cat err.txt)"
grep -q "dim 32 is not a multiple of heads 3" err.txt || fail "--compare: $(cat err.txt)"

expect 2 "no configuration to measure: --modes dp runs in one process" \
	"$B" train --cpu-ranks 1 --nodes 2 --modes dp -- --data d
expect 2 "--dtypes: no value in ','" "$B" train --dtypes , -- --data d
expect 2 "--modes: no value in ','" "$B" train --modes , -- --data d
expect 2 "--backends: no backend in ','" "$B" allreduce --backends ,
exit 0
