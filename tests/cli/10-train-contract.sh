# mgpu-train: the contract every tool shares (help, version, usage errors,
# closed pipe, man page lint).
. tests/cli/lib.sh
"$BIN/mgpu-train" --help >help.txt || fail "--help exited $?"
grep -q "^usage: mgpu-train" help.txt || fail "--help lacks the usage line"
"$BIN/mgpu-train" --version | grep -q "^mgpu-train [0-9]" || fail "--version"
"$BIN/mgpu-train" -vV | grep -q "^backends: ref cpu" || fail "-vV lacks the backends"
expect 2 "unknown or incomplete option '--frobnicate'" "$BIN/mgpu-train" --frobnicate
expect 2 "--batch-size: '4x' is not an integer" "$BIN/mgpu-train" --batch-size 4x
expect 2 "--lr: '0.1.2' is not a number" "$BIN/mgpu-train" --lr 0.1.2
expect 2 "--epochs: 0 is out of range" "$BIN/mgpu-train" --epochs 0
expect 2 "--optimizer: 'adam' is not one of sgd|adamw" "$BIN/mgpu-train" --optimizer adam
expect 2 "unexpected argument 'extra'" "$BIN/mgpu-train" extra
expect 2 "--model: an mlp needs at least two sizes" "$BIN/mgpu-train" --model mlp:10
expect 2 "--model: not a spec (mlp:... or gpt:...) and 'no.spec': cannot open" "$BIN/mgpu-train" --model no.spec
# A reader that goes away early: a quiet exit, nothing on stderr.
mkidx d 600 100 8 4
set +e
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 50 --batch-size 8 --log-every 1 -q 2>err.txt | head -n 2 >/dev/null
set -e
[ ! -s err.txt ] || fail "closed pipe printed: $(cat err.txt)"
for mode in ddp dp; do
	set +e
	"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 50 --batch-size 8 --log-every 1 -q \
		--cpu-ranks 2 --mode $mode 2>err.txt | head -n 2 >/dev/null
	set -e
	[ ! -s err.txt ] || fail "closed pipe ($mode, 2 ranks) printed: $(cat err.txt)"
done
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-train.1" "$SRC/man/mgpu.7" || fail "man pages lint"
fi
exit 0
