# mgpu-train --config / -f and --print-config, mgpu-bench's the same:
# a file of 'key = value' lines under the command line, errors naming the
# file and line, and the settings -v prints being a file that repeats the run.
. tests/cli/lib.sh
mkidx d 600 100 8 4
# -q -v: the settings are all of standard error, and they are a config file
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 2 --lr 0.0125 --global-batch-size 32 \
	--cpu-ranks 2 --log-every 5 --momentum 0.5 --nesterov -q -v >first.tsv 2>run.conf ||
	fail "-v: $(cat run.conf)"
grep -q '^lr = 0.0125$' run.conf || fail "-v lacks lr: $(cat run.conf)"
grep -q '^nesterov = 1$' run.conf || fail "-v lacks the flag: $(cat run.conf)"
grep -q '^cpu-ranks = 2$' run.conf || fail "-v lacks the resolved ranks: $(cat run.conf)"
grep -vq '^mgpu-train' run.conf || fail "-q -v printed more than settings: $(cat run.conf)"
"$BIN/mgpu-train" --config run.conf -q >again.tsv 2>err.txt || fail "--config: $(cat err.txt)"
# the same run: every loss and rate, every evaluation
cut -f 1-5,9-12 first.tsv >a.txt
cut -f 1-5,9-12 again.tsv >b.txt
[ "$(wc -l <a.txt)" -gt 3 ] || fail "too few records: $(cat first.tsv)"
cmp -s a.txt b.txt || fail "--config run differs: $(diff a.txt b.txt | head)"
# --print-config prints the same settings and trains nothing
"$BIN/mgpu-train" --config run.conf --print-config >p.conf 2>err.txt || fail "$(cat err.txt)"
cmp -s p.conf run.conf || fail "--print-config of the file differs: $(diff p.conf run.conf)"
# the command line wins over the file, and -f is --config
"$BIN/mgpu-train" -f run.conf --lr 0.5 --print-config | grep -q '^lr = 0.5$' ||
	fail "the command line did not override the file"
# comments, blanks, quotes, '_' for '-', flags as words
cat >c.conf <<'CONF'
# a comment
   # an indented comment

data = d   # the data
batch_size = 8
nesterov = no
model = "mlp:64-16-4"
save-dir = "a # b \"q\""
CONF
"$BIN/mgpu-train" -f c.conf --print-config >cp.conf || fail "comments: $(cat cp.conf)"
grep -q '^batch-size = 8$' cp.conf || fail "batch_size: $(cat cp.conf)"
grep -q '^nesterov' cp.conf && fail "nesterov = no still set"
grep -q '^save-dir = "a # b \\"q\\""$' cp.conf || fail "quoted value: $(grep save-dir cp.conf)"
# errors name the file and the line: unknown keys, bad values, bad lines
printf 'lr = 0.1\nlrr = 3\n' >bad1.conf
expect 2 "bad1.conf:2: unknown key 'lrr'" "$BIN/mgpu-train" -f bad1.conf
printf '\n\nepochs = 0\n' >bad2.conf
expect 2 "bad2.conf:3: --epochs: 0 is out of range" "$BIN/mgpu-train" -f bad2.conf
printf 'lr 0.1\n' >bad3.conf
expect 2 "bad3.conf:1: expected 'key = value'" "$BIN/mgpu-train" --config bad3.conf
printf 'nesterov = maybe\n' >bad4.conf
expect 2 "bad4.conf:1: --nesterov: 'maybe' is not one of" "$BIN/mgpu-train" -f bad4.conf
printf 'config = x.conf\n' >bad5.conf
expect 2 "bad5.conf:1: a configuration file cannot set the key 'config'" \
	"$BIN/mgpu-train" -f bad5.conf
printf 'prompt = "open\n' >bad6.conf
expect 2 "bad6.conf:1: a quoted value without its closing" "$BIN/mgpu-train" -f bad6.conf
expect 1 "'missing.conf': cannot open" "$BIN/mgpu-train" -f missing.conf
# a --resume recorded in the file resumes like the option
"$BIN/mgpu-train" --data d --model mlp:64-16-4 --epochs 1 --save-dir ck -q >/dev/null
printf 'resume = ck\nepochs = 2\n' >res.conf
"$BIN/mgpu-train" -f res.conf -q >res.tsv 2>err.txt || fail "resume from a file: $(cat err.txt)"
printf 'resume = ck\nlr = 0.9\n' >res2.conf
expect 2 "--lr 0.9 differs from the checkpoint's 0.05" "$BIN/mgpu-train" -f res2.conf

# mgpu-bench: the sweeps' settings, read back and overridden the same way
"$BIN/mgpu-bench" allreduce --ranks 2 --sizes 4K:16K --iters 2 --backends cpu -q -v \
	>ar1.tsv 2>ar.conf || fail "bench -v: $(cat ar.conf)"
grep -q '^sizes = 4096,8192,16384$' ar.conf || fail "bench sizes: $(cat ar.conf)"
"$BIN/mgpu-bench" allreduce -f ar.conf -q >ar2.tsv 2>err.txt || fail "bench -f: $(cat err.txt)"
[ "$(cut -f 1-4,8 ar1.tsv)" = "$(cut -f 1-4,8 ar2.tsv)" ] || fail "bench rows differ: $(cat ar2.tsv)"
"$BIN/mgpu-bench" train --cpu-ranks 1,2 --modes ddp --repeat 1 --tolerance 5% --print-config \
	>bt.conf || fail "bench train --print-config"
"$BIN/mgpu-bench" train -f bt.conf --print-config | cmp -s - bt.conf ||
	fail "bench train: the file reads back otherwise: $(cat bt.conf)"
"$BIN/mgpu-bench" train -f bt.conf --modes dp,ddp --print-config | grep -q '^modes = dp,ddp$' ||
	fail "bench: the command line did not override the file"
printf 'repeat = 1\nmodes = ddp,xx\n' >bb.conf
expect 2 "bb.conf:2: --modes: 'xx' is not one of ddp|dp" "$BIN/mgpu-bench" train -f bb.conf
printf 'sizez = 4K\n' >bb2.conf
expect 2 "bb2.conf:1: unknown key 'sizez'" "$BIN/mgpu-bench" allreduce -f bb2.conf
exit 0
