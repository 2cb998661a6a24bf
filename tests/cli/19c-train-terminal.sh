# mgpu-train as a person at a terminal sees it (a pseudo-terminal from
# script(1)): a live status line on stderr with epoch, step, loss, lr, rate,
# elapsed time and ETA, gone from the screen once the run ends; one aligned
# line per evaluation with only this model's columns (no NA, no TSV); a
# summary with the test result, memory, the checkpoint and a command that
# trains on, which works when run. Piped or with -o, stdout's records are
# the TSV a run without any terminal writes, and the terminal still gets
# the status and the summary; -q silences both; --format keeps the records
# on a terminal. A gpt shows bits per byte and tokens/s; of 2 ranks only
# rank 0 speaks; SIGINT ends with the command that resumes the run.
. tests/cli/lib.sh
need_script
mkidx d 900 100 8 4
M=$BIN/mgpu-train
base="--data d --model mlp:64-16-4 --batch-size 16 --lr 0.02"
args="$base --epochs 2"
status_re='epoch [12]/2  step [0-9]+/100  loss [0-9]+\.[0-9]{4}  lr [0-9.e-]+  [0-9.]+[kMG]? samples/s  elapsed [0-9:]+s?  ETA [0-9:?]+s?'

# stdout and stderr the terminal: the table and the summary, not the records
on_tty raw1 "$M $args --save-dir ck" || fail "run on a terminal: exit $tty_rc: $(screen raw1)"
screen raw1 >screen1
grep -aEq "$status_re" raw1 || fail "no status line was drawn: $(head -c 600 raw1 | cat -v)"
grep -Eq 'ETA|samples/s  elapsed' screen1 && fail "the status line stayed on the screen: $(cat screen1)"
grep -q 'NA' screen1 && fail "NA on the screen: $(cat screen1)"
grep -q "$(printf '\t')" screen1 && fail "TSV on the screen: $(cat screen1)"
grep -q '^kind' screen1 && fail "the TSV header on the screen"
sed -n '/^epoch  *step  *train_loss  *val_loss  *val_acc  *samples\/s  *time$/,/^$/p' screen1 |
	sed '/^$/d' >table
[ "$(wc -l <table)" = 3 ] || fail "want a header and 2 eval lines: $(cat screen1)"
aligned table || fail "eval lines not aligned with the header: $(cat table)"
awk 'NR > 1 && !($1 == NR - 1 && $5 ~ /^[0-9.]+%$/) { exit 1 }' table ||
	fail "eval lines: epoch and accuracy: $(cat table)"
grep -Eq '^test: +accuracy [0-9.]+%, loss [0-9.]+; validation accuracy [0-9.]+%$' screen1 ||
	fail "summary lacks the test accuracy: $(cat screen1)"
grep -Eq '^done: +step 100, epoch 2, in [0-9:]+s? \([0-9.]+[kMG]? samples/s\)$' screen1 ||
	fail "summary lacks steps and time: $(cat screen1)"
grep -Eq '^memory: +peak [0-9.]+ [KMG]?i?B on a device, [0-9.]+ [KMG]?i?B resident' screen1 ||
	fail "summary lacks peak memory: $(cat screen1)"
grep -q "^checkpoint: ck/step-00000100$" screen1 || fail "summary lacks the checkpoint: $(cat screen1)"
cmd=$(sed -n 's/^train on: *//p' screen1)
[ "$cmd" = "$M $base --save-dir ck --resume ck --epochs 4" ] || fail "train-on command: '$cmd'"
# the command works: it trains on from step 100 to 200
eval "$cmd --format tsv" >more.tsv 2>err.txt || fail "train-on command failed: $(cat err.txt)"
grep -q "resuming from ck" err.txt || fail "train-on command did not resume: $(cat err.txt)"
awk -F '\t' '$1 == "summary" && $2 == 200 { ok = 1 } END { exit !ok }' more.tsv ||
	fail "train-on command did not reach step 200: $(tail -n 1 more.tsv)"

# 60 columns: the parts that matter most stay whole (lr, elapsed time and
# epoch give way), and no line is longer than 59
on_tty rawn "stty cols 60; $M $args" || fail "60 columns: exit $tty_rc"
tr '\r' '\n' <rawn | grep -a 'step [0-9]*/100' | sed 's/^\x1b\[K//' >narrow
grep -Eq '^step [0-9]+/100  loss [0-9.]+  [0-9.]+[kMG]? samples/s  ETA [0-9:?]+s?$' narrow ||
	fail "60 columns: $(cat -v narrow)"
awk 'length($0) > 59 { exit 1 }' narrow || fail "60 columns: a line too long: $(cat -v narrow)"
# --max-steps ended it: the command lifts it (--max-steps 0); a save dir the
# shell must quote comes back quoted
on_tty rawq "$M $args --max-steps 3 --save-dir \"it's here\"" || fail "--max-steps 3: exit $tty_rc"
cmd=$(screen rawq | sed -n 's/^train on: *//p')
[ "$cmd" = "$M $args --save-dir 'it'\\''s here' --resume 'it'\\''s here' --max-steps 0" ] ||
	fail "--max-steps 3: train-on command: '$cmd'"
eval "$cmd --format tsv" >q.tsv 2>err.txt || fail "the quoted command failed: $(cat err.txt)"
grep -q "resuming from it's here" err.txt || fail "the quoted command: $(cat err.txt)"
tail -n 1 q.tsv | grep -q "^summary	100	" || fail "the quoted command: $(tail -n 1 q.tsv)"

# at its last step (options abbreviated, as getopt takes them): nothing to
# train, the checkpoint it resumed, and the command for as many epochs again
on_tty rawe "$M $base --save-dir ck --res ck --epoch=4" || fail "a finished run: exit $tty_rc"
screen rawe >screene
grep -q '^done: *step 200: nothing was left to train$' screene || fail "a finished run: $(cat screene)"
grep -q '^checkpoint: ck$' screene || fail "a finished run: no checkpoint: $(cat screene)"
grep -qx "train on: *$M $base --save-dir ck --resume ck --epochs 8" screene ||
	fail "a finished run: $(grep 'train on' screene)"

# the records of a run with no terminal at all, timings masked
mask() { awk -F '\t' -v OFS='\t' '{ for (i = 6; i <= 19; i++) if (i ~ /^(6|7|8|13|19)$/ && $i != "NA") $i = "T"; print }' "$@"; }
"$M" $args 2>/dev/null | mask >plain.tsv
[ "$(head -n 1 plain.tsv | awk -F '\t' '{ print NF }')" = 25 ] || fail "records: not 25 columns (loss_scale, skipped_steps last)"
# piped: the same records; the terminal gets the status and the summary
on_tty raw2 "$M $args >piped.tsv" || fail "piped run: exit $tty_rc"
mask piped.tsv | cmp -s - plain.tsv || fail "piped records differ: $(mask piped.tsv | diff - plain.tsv | head)"
grep -aEq "$status_re" raw2 || fail "piped: no status line on the terminal"
screen raw2 >screen2
grep -Eq '^mgpu-train: test: +accuracy [0-9.]+%' screen2 || fail "piped: no summary: $(cat screen2)"
grep -q '^mgpu-train: no checkpoint written (--save-dir DIR keeps one)$' screen2 ||
	fail "piped: the summary does not say there is no checkpoint: $(cat screen2)"
grep -q 'val_acc' screen2 && fail "piped: eval lines on the terminal: $(cat screen2)"
# -o: the same
on_tty raw3 "$M $args -o run.tsv" || fail "-o run: exit $tty_rc"
mask run.tsv | cmp -s - plain.tsv || fail "-o records differ"
grep -aEq "$status_re" raw3 || fail "-o: no status line on the terminal"
screen raw3 | grep -Eq '^mgpu-train: test: +accuracy' || fail "-o: no summary: $(screen raw3)"
# -q: neither status nor summary with the records piped; the table stays
on_tty raw4 "$M $args -q >quiet.tsv" || fail "-q run: exit $tty_rc"
mask quiet.tsv | cmp -s - plain.tsv || fail "-q records differ"
[ ! -s raw4 ] || fail "-q wrote to the terminal: $(cat -v raw4 | head -c 400)"
on_tty raw5 "$M $args -q" || fail "-q table: exit $tty_rc"
grep -aEq 'ETA' raw5 && fail "-q drew a status line"
screen raw5 | grep -q '^epoch  *step  *train_loss' || fail "-q lost the table: $(screen raw5)"
# --format tsv on a terminal: the records, as asked
on_tty raw6 "$M $args --format tsv 2>/dev/null" || fail "--format tsv: exit $tty_rc"
screen raw6 | tr -d '\r' | mask | cmp -s - plain.tsv || fail "--format tsv on a terminal: $(screen raw6 | head -n 3)"

# a gpt: bits per byte and tokens per second, no accuracy; 2 ranks, one voice
text_idx g 400 40 17 3
on_tty raw7 "$M --data g --model gpt:layers=1,heads=2,dim=16,ctx=16,vocab=128 --epochs 2 \
	--batch-size 8 --optimizer adamw --lr 0.01 --cpu-ranks 2" || fail "gpt run: exit $tty_rc: $(screen raw7)"
screen raw7 >screen7
grep -aEq 'epoch 1/2  step [0-9]+/44  loss [0-9.]+  lr [0-9.e-]+  [0-9.]+[kMG]? tokens/s' raw7 ||
	fail "gpt: status line lacks tokens/s: $(cat -v raw7 | head -c 600)"
[ "$(grep -c '^epoch  *step  *train_loss  *val_loss  *val_bpb  *tokens/s  *time$' screen7)" = 1 ] ||
	fail "gpt: want one header with val_bpb and tokens/s: $(cat screen7)"
grep -Eq 'val_acc|accuracy' screen7 && fail "gpt: an accuracy on the screen: $(cat screen7)"
[ "$(grep -c '^test: ' screen7)" = 1 ] || fail "gpt, 2 ranks: want one summary: $(cat screen7)"
grep -Eq '^test: +[0-9.]+ bits per byte \(loss [0-9.]+\); validation [0-9.]+ bits per byte$' screen7 ||
	fail "gpt: summary lacks bits per byte: $(cat screen7)"
sed -n '/^epoch  *step/,/^$/p' screen7 | sed '/^$/d' >table7
aligned table7 || fail "gpt: eval lines not aligned: $(cat table7)"

# --per-class with labels that are words: a table of the classes, names
# aligned, after the summary
python3 - <<'PY'
import random
r = random.Random(1)
names = ["WALKING", "LAYING", "SITTING_DOWN"]
with open("har.csv", "w") as f:
    f.write("a,b,c,activity\n")
    for i in range(240):
        y = names[i % 3]
        f.write(",".join(str(r.random() + 3 * (j == names.index(y))) for j in range(3)))
        f.write(",%s\n" % y)
PY
"$BIN/mgpu-shard" -q --label-column activity --test-fraction 0.25 -o har/manifest.tsv har.csv &&
	"$BIN/mgpu-cache" -q -o harc har/manifest.tsv >/dev/null || fail "word labels: shard, cache"
on_tty rawc "$M --data harc --model mlp:auto-16-auto --epochs 2 --batch-size 8 --per-class" ||
	fail "--per-class: exit $tty_rc: $(screen rawc)"
screen rawc | sed -n '/^class  *name  *samples  *test_acc$/,$p' >classes
[ "$(awk '{ print $1, $2 }' classes)" = "$(printf 'class name\n0 LAYING\n1 SITTING_DOWN\n2 WALKING')" ] ||
	fail "--per-class: $(screen rawc)"
awk 'NR == 1 { at = index($0, "name"); len = length($0); next }
	index($0, $2) != at || length($0) != len { exit 1 }' classes ||
	fail "--per-class: not aligned: $(cat classes)"

# under an outside launcher the command is each rank's
on_tty raw9 "RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
	MASTER_PORT=29871 $M $args --save-dir ck9" || fail "torchrun's variables: exit $tty_rc"
screen raw9 | grep -q "^train on: .* --resume ck9 --epochs 4  (each rank, under torchrun as before)$" ||
	fail "torchrun's variables: $(screen raw9)"

# SIGINT: the checkpoint and the command that resumes the run, which ends it
mkidx_big big 6000
long="--data big --model mlp:784-256-10 --epochs 20 --max-steps 3000 --batch-size 8 --lr 0.01"
timeout -k 5 120 script -q -e -c "stty cols 150; echo \$\$ >pid; exec $M $long --cpu-ranks 2 \
	--save-dir ck2" /dev/null </dev/null >raw8 &
spid=$!
for _ in $(seq 400); do grep -aq 'step [1-9][0-9]*/' raw8 2>/dev/null && break; sleep 0.05; done
grep -aq 'step [1-9][0-9]*/' raw8 || { kill "$spid"; fail "no status line: $(cat -v raw8)"; }
kill -INT "$(cat pid)"
set +e
wait "$spid"
rc=$?
set -e
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, want 130: $(screen raw8)"
screen raw8 >screen8
grep -q '^mgpu-train: interrupted at step [0-9]*, checkpoint written$' screen8 ||
	fail "SIGINT: $(cat screen8)"
grep -q '^checkpoint: ck2/step-[0-9]*$' screen8 || fail "SIGINT: no checkpoint: $(cat screen8)"
cmd=$(sed -n 's/^resume: *//p' screen8)
[ "$cmd" = "$M $long --cpu-ranks 2 --save-dir ck2 --resume ck2" ] || fail "resume command: '$cmd'"
eval "timeout 120 $cmd" >resumed.tsv 2>err.txt || fail "resume command failed: $(cat err.txt)"
awk -F '\t' '$1 == "summary" && $2 == 3000 { ok = 1 } END { exit !ok }' resumed.tsv ||
	fail "the resumed run did not end at step 3000: $(tail -n 1 resumed.tsv)"
exit 0
