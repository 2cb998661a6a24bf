# mgpu-train --save-dir: a run holds its save dir, so a second run on it is
# refused naming the first one's pid (a killed run's lock does not count);
# a run that fails before saving leaves no directory and no lock behind.
. tests/cli/lib.sh
mkidx d 600 100 8 4
train() { "$BIN/mgpu-train" --data d --model mlp:64-16-4 --batch-size 16 -q "$@"; }
wait_for() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; fail "no $1"; }

# A second run on a save dir in use, with one rank and with two.
long="--data d --model mlp:64-16-4 --batch-size 16 -q --epochs 1000 --save-dir ck"
"$BIN/mgpu-train" $long >long.tsv 2>long.err &
L=$!
trap 'kill -KILL $L 2>/dev/null || true; rm -rf "$T"' EXIT
wait_for ck/lock
expect 1 "--save-dir: 'ck' is in use by another run (pid $L)" train --save-dir ck --max-steps 2
expect 1 "--save-dir: 'ck' is in use by another run (pid $L)" train --save-dir ck --max-steps 2 --cpu-ranks 2
[ ! -e ck/step-00000002 ] || fail "a refused run wrote a checkpoint"
kill -TERM $L
set +e
wait $L
rc=$?
set -e
[ "$rc" = 130 ] || fail "the first run exited $rc: $(cat long.err)"
[ -e ck/latest ] && [ ! -e ck/lock ] || fail "after the first run: $(ls ck)"
# Its checkpoint resumes; then a run killed with SIGKILL leaves a stale
# lock file, which does not stop the next run.
"$BIN/mgpu-train" $long --resume ck >/dev/null 2>&1 &
L=$!
wait_for ck/lock
sleep 0.3
kill -KILL $L
{ wait $L; } 2>/dev/null || true
[ -e ck/lock ] || fail "no stale lock file to test with"
train --save-dir ck --max-steps 2 >/dev/null || fail "a stale lock blocked the next run"
[ ! -e ck/lock ] || fail "the lock file stayed"

# Failures before training leave nothing: not the directories the run made,
# not a lock in a directory that was there.
expect 1 "'missing': does not exist; want a cache" train --data missing --save-dir new/sub
[ ! -e new ] || fail "a failed run left $(find new)"
expect 1 "samples have 64 features but the model takes 32" train --model mlp:32-4 --save-dir new
[ ! -e new ] || fail "a failed run (bad model) left $(find new)"
! train --data missing --save-dir new --cpu-ranks 2 2>/dev/null || fail "2 ranks, no data: exit 0"
[ ! -e new ] || fail "a failed 2-rank run left $(find new)"
mkdir there
expect 1 "'missing': does not exist; want a cache" train --data missing --save-dir there
[ -d there ] && [ -z "$(ls -A there)" ] || fail "the save dir that was there: $(ls -A there)"
exit 0
