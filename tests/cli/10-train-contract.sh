# mgpu-train: the contract every tool shares (help, version, usage errors,
# the common options, closed pipe, man page lint).
. tests/cli/lib.sh
"$BIN/mgpu-train" --help >help.txt || fail "--help exited $?"
grep -q "^usage: mgpu-train" help.txt || fail "--help lacks the usage line"
help_man_agree mgpu-train.1 help.txt
grep -q "^  --lr X  *peak learning rate \[0.05\]$" help.txt || fail "--help lacks --lr's default"
"$BIN/mgpu-train" --version | grep -q "^mgpu-train [0-9]" || fail "--version"
"$BIN/mgpu-train" -vV | grep -q "^backends: ref cpu" || fail "-vV lacks the backends"
if "$BIN/mgpu-train" -vV | grep -q "^features: .*mpi=1"; then
	"$BIN/mgpu-train" -vV | grep -q "^mpi: ." || fail "-vV lacks the MPI library's version"
fi
expect 2 "unknown or incomplete option '--frobnicate'" "$BIN/mgpu-train" --frobnicate
expect 2 "--batch-size: '4x' is not an integer" "$BIN/mgpu-train" --batch-size 4x
expect 2 "--lr: '0.1.2' is not a number" "$BIN/mgpu-train" --lr 0.1.2
expect 2 "--epochs: 0 is out of range" "$BIN/mgpu-train" --epochs 0
expect 2 "--optimizer: 'adam' is not one of sgd|adamw" "$BIN/mgpu-train" --optimizer adam
expect 2 "unexpected argument 'extra'" "$BIN/mgpu-train" extra
expect 2 "--model: an mlp needs at least two sizes" "$BIN/mgpu-train" --model mlp:10
expect 2 "--model: not a spec (mlp:..., gpt:... or cnn:...) and 'no.spec': cannot open" "$BIN/mgpu-train" --model no.spec
expect 2 "--format: 'xml' is not one of tsv|json|markdown" "$BIN/mgpu-train" --format xml
expect 2 "--json and --format tsv: choose one" "$BIN/mgpu-train" --json --format tsv
expect 2 "--output: empty file name" "$BIN/mgpu-train" -o ''
# A reader that goes away early: a quiet exit, nothing on stderr, killed by
# SIGPIPE as Unix tools are (141 in the shell), not a failure's 1.
mkidx d 600 100 8 4
set +e
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 50 --batch-size 8 --log-every 1 -q 2>err.txt | head -n 2 >/dev/null
rc=${PIPESTATUS[0]}
set -e
[ ! -s err.txt ] || fail "closed pipe printed: $(cat err.txt)"
[ "$rc" = 141 ] || fail "closed pipe: exit $rc, want 141 (SIGPIPE)"
for mode in ddp dp; do
	set +e
	"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 50 --batch-size 8 --log-every 1 -q \
		--cpu-ranks 2 --mode $mode 2>err.txt | head -n 2 >/dev/null
	rc=${PIPESTATUS[0]}
	set -e
	[ ! -s err.txt ] || fail "closed pipe ($mode, 2 ranks) printed: $(cat err.txt)"
	[ "$rc" = 141 ] || fail "closed pipe ($mode, 2 ranks): exit $rc, want 141 (SIGPIPE)"
done
# --selftest's rows to a reader that stops after the header: quiet too.
set +e
"$BIN/mgpu-train" --selftest 2>err.txt | head -n 1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
# Its notes (which GEMM path, no cuda device) are stderr's in any case and
# come out when the whole table reached the pipe before head exited (a
# loaded machine), so only an error about the pipe fails.
! grep -qiE "error:|broken pipe" err.txt ||
	fail "--selftest into a closed pipe printed: $(cat err.txt)"
[ "$rc" = 141 ] || [ "$rc" = 0 ] || fail "--selftest into a closed pipe: exit $rc"
# The common options: -o writes the same table atomically (rank 0 alone,
# one header), --format markdown a Markdown table, -v the settings.
train() { "$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 1 --batch-size 16 "$@"; }
train -q --cpu-ranks 2 --mode ddp >plain.tsv
train -q --cpu-ranks 2 --mode ddp -o m.tsv >out.txt 2>err.txt || fail "-o: $(cat err.txt)"
[ ! -s out.txt ] || fail "-o still wrote to stdout"
[ "$(grep -c '^kind' m.tsv)" = 1 ] || fail "-o with 2 ranks: $(grep -c '^kind' m.tsv) headers"
[ "$(cut -f 1-5 m.tsv | head -n 2)" = "$(cut -f 1-5 plain.tsv | head -n 2)" ] ||
	fail "-o table differs from stdout's: $(head -n 2 m.tsv)"
ls m.tsv.tmp.* 2>/dev/null && fail "-o left a temporary file"
expect 1 "'nodir'" "$BIN/mgpu-train" --data nodir -q -o gone.tsv
[ ! -e gone.tsv ] || fail "a failed run left its -o file"
train -q --format markdown >m.md
head -n 2 m.md | grep -q '^| kind | step | epoch | loss |' || fail "markdown header: $(head -n 1 m.md)"
sed -n 2p m.md | grep -q '^| --- | --- |' || fail "markdown separator: $(sed -n 2p m.md)"
grep -q '^| summary | ' m.md || fail "markdown rows: $(cat m.md)"
train -q --json | grep -q '^{"kind":"summary"' || fail "--json"
# (the batch-size the global batch gives, and the sync backend auto chose)
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 1 -q -v --lr 0.0125 \
	--global-batch-size 32 --cpu-ranks 2 >/dev/null 2>err.txt || fail "-v: $(cat err.txt)"
for kv in 'data = d' 'batch-size = 16' 'global-batch-size = 32' 'lr = 0.0125' 'cpu-ranks = 2' \
	'sync-backend = cpu'; do
	grep -qx "$kv" err.txt || fail "-v settings lack '$kv': $(cat err.txt)"
done
# The settings are a configuration file that repeats the run.
"$BIN/mgpu-train" --config err.txt -q >again.tsv 2>err2.txt || fail "settings file: $(cat err2.txt)"
expect 2 "--batch-size 8 and --global-batch-size 32 disagree" "$BIN/mgpu-train" --data d \
	--model mlp:64-16-4 --batch-size 8 --global-batch-size 32 --cpu-ranks 2
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-train.1" "$SRC/man/mgpu.7" || fail "man pages lint"
fi
exit 0
