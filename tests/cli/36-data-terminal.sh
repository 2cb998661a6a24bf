# mgpu-shard and mgpu-cache as a person at a terminal sees them (a
# pseudo-terminal from script(1)): progress on stderr (the source being
# read; samples, shards or chunks done of the total, bytes, rate, elapsed,
# ETA), gone from the screen when the tool ends, the table on stdout clean;
# none with -q or when stderr is not a terminal; stdout's table the same
# bytes as a run without a terminal.
. tests/cli/lib.sh
need_script
mkidx d 2000 200 8 4
S=$BIN/mgpu-shard C=$BIN/mgpu-cache
num='[0-9.]+[kMG]?'
bytes='[0-9.]+ [KMGT]?i?B'

# mgpu-shard: the manifest to -o, the progress on the terminal
on_tty raw1 "$S --shard-size 300 -o sh/manifest.tsv d" || fail "mgpu-shard: exit $tty_rc: $(screen raw1)"
grep -aq "reading 'd' (source 1 of 1)" raw1 || fail "mgpu-shard: no reading line: $(cat -v raw1)"
grep -aEq "writing $num/2.20k samples, $bytes, $bytes/s, [0-9:]+s?" raw1 ||
	fail "mgpu-shard: no writing progress: $(cat -v raw1)"
screen raw1 >screen1
grep -Eq 'reading|writing' screen1 && fail "mgpu-shard: progress left on the screen: $(cat screen1)"
[ "$(cat screen1)" = "mgpu-shard: 2000 train, 0 val, 200 test samples (seed 42)" ] ||
	fail "mgpu-shard: the screen holds: $(cat screen1)"
# the manifest on the terminal: clean rows, the same bytes as without one
"$S" --shard-size 300 -d sh2 d >plain.tsv 2>err.txt
grep -q "$(printf '\r')" err.txt && fail "mgpu-shard: progress with stderr not a terminal"
on_tty raw2 "$S --shard-size 300 -d sh2 d" || fail "mgpu-shard to a terminal: exit $tty_rc"
screen raw2 | grep -v '^mgpu-shard: ' >shown.tsv
cmp -s shown.tsv plain.tsv || fail "mgpu-shard: the manifest on the terminal: $(diff shown.tsv plain.tsv | head)"
on_tty raw3 "$S --shard-size 300 -d sh2 d >piped.tsv" || fail "mgpu-shard piped: exit $tty_rc"
cmp -s piped.tsv plain.tsv || fail "mgpu-shard: piped manifest differs"
grep -aq 'writing' raw3 || fail "mgpu-shard piped: no progress on the terminal"
on_tty raw4 "$S --shard-size 300 -d sh2 -q d >/dev/null" || fail "mgpu-shard -q: exit $tty_rc"
[ ! -s raw4 ] || fail "mgpu-shard -q wrote to the terminal: $(cat -v raw4)"
# an archive source: its samples and bytes as they are read, ETA from its size
on_tty rawa "$S --shard-size 100 -d sh3 sh2/train-000000.tar >/dev/null" ||
	fail "mgpu-shard of an archive: exit $tty_rc: $(screen rawa)"
grep -aEq "reading 'sh2/train-000000.tar': [0-9]+ samples, $bytes, $bytes/s, [0-9:]+s?, ETA" rawa ||
	fail "mgpu-shard of an archive: no reading progress: $(cat -v rawa)"

# mgpu-cache: shards read of the manifest's, then samples cached
on_tty raw5 "$C --chunk-size 4K -o c sh/manifest.tsv >/dev/null" || fail "mgpu-cache: exit $tty_rc: $(screen raw5)"
grep -aEq "reading 8/8 shards, $bytes, $bytes/s, [0-9:]+s?" raw5 ||
	fail "mgpu-cache: no reading progress: $(cat -v raw5)"
grep -aEq "caching $num/2.20k samples, $bytes, $bytes/s" raw5 ||
	fail "mgpu-cache: no caching progress: $(cat -v raw5)"
[ "$(screen raw5)" = "mgpu-cache: 'c' built" ] || fail "mgpu-cache: the screen holds: $(screen raw5)"
"$C" --force --chunk-size 4K -o c sh/manifest.tsv >plain.tsv 2>err.txt
grep -q "$(printf '\r')" err.txt && fail "mgpu-cache: progress with stderr not a terminal"
on_tty raw6 "$C --force --chunk-size 4K -o c sh/manifest.tsv" || fail "mgpu-cache to a terminal: exit $tty_rc"
screen raw6 | grep -v '^mgpu-cache: ' >shown.tsv
cmp -s shown.tsv plain.tsv || fail "mgpu-cache: the table on the terminal: $(diff shown.tsv plain.tsv | head)"
on_tty raw7 "$C --force -q --chunk-size 4K -o c sh/manifest.tsv >/dev/null" || fail "mgpu-cache -q: exit $tty_rc"
[ ! -s raw7 ] || fail "mgpu-cache -q wrote to the terminal: $(cat -v raw7)"
# --verify: chunks checked of all, bytes, rate, ETA
on_tty raw8 "$C --verify c >/dev/null" || fail "mgpu-cache --verify: exit $tty_rc"
grep -aEq "verifying [0-9]+/36 chunks, $bytes, $bytes/s, [0-9:]+s?" raw8 ||
	fail "mgpu-cache --verify: no progress: $(cat -v raw8)"
[ "$(screen raw8)" = "mgpu-cache: 'c': all 36 chunks check out" ] ||
	fail "mgpu-cache --verify: the screen holds: $(screen raw8)"
exit 0
