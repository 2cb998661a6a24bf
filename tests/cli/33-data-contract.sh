# mgpu-shard and mgpu-cache: the options every tool shares, from one table
# (--help and the man pages list the same options; --format, --json, -o,
# closed pipe) and the messages through the shared functions.
. tests/cli/lib.sh
S=$BIN/mgpu-shard C=$BIN/mgpu-cache
"$S" --help >shard-help.txt || fail "mgpu-shard --help exited $?"
help_man_agree mgpu-shard.1 shard-help.txt
"$C" --help >cache-help.txt || fail "mgpu-cache --help exited $?"
help_man_agree mgpu-cache.1 cache-help.txt
grep -q "^  --shard-size N  *samples per shard \[10000\]$" shard-help.txt ||
	fail "mgpu-shard --help lacks a default"
grep -q "^  --level N  *zstd level \[3\]$" cache-help.txt || fail "mgpu-cache --help lacks a default"
"$S" -vV | grep -q "^backends: ref cpu" || fail "mgpu-shard -vV"
"$C" --version | grep -q "^mgpu-cache [0-9]" || fail "mgpu-cache --version"
expect 2 "--json and --format markdown: choose one" "$S" --json --format markdown d
expect 2 "--format: 'csv' is not one of tsv|json|markdown" "$C" --format csv -o c x
expect 2 "--shard-size: 0 is out of range [1, 4294967295]" "$S" --shard-size 0 d
expect 2 "--chunk-size: 0 is out of range" "$C" --chunk-size 0 -o c x
mkidx d 300 50 8 4
# The manifest as a Markdown table, and as JSON Lines; the summary line
# through the shared note(): "mgpu-shard: ...", silenced by -q.
"$S" --format markdown -d sh d >m.md 2>err.txt || fail "--format markdown: $(cat err.txt)"
[ "$(head -n 1 m.md)" = "| split | path | samples | bytes | sha256 |" ] || fail "header: $(head -n 1 m.md)"
grep -q '^| train | sh/train-000000.tar | 300 | ' m.md || fail "markdown rows: $(cat m.md)"
grep -q "^mgpu-shard: 300 train, 0 val, 50 test samples (seed 42)$" err.txt ||
	fail "summary line: $(cat err.txt)"
"$S" -q --json -v -o fm/manifest.tsv d 2>err.txt || fail "--json -o: $(cat err.txt)"
grep -q '^{"split":"train","path":"train-000000.tar"' fm/manifest.tsv || fail "--json -o: $(cat fm/manifest.tsv)"
grep -q "^mgpu-shard: train: 300 samples in 1 shards$" err.txt || fail "-v: $(cat err.txt)"
# The JSON manifest is part of the set it sits in: the same run again
# finds the same set, and --format markdown replaces it with --force.
"$S" -q --json -o fm/manifest.tsv d 2>err.txt || fail "--json -o again: $(cat err.txt)"
"$S" -q --format markdown -o fm/manifest.tsv d 2>err.txt &&
	fail "markdown over json without --force"
grep -q "holds another shard set; --force replaces it" err.txt || fail "no --force: $(cat err.txt)"
"$S" -q --force --format markdown -o fm/manifest.tsv d 2>err.txt || fail "--force: $(cat err.txt)"
"$S" -q --force --json -o fm/manifest.tsv d 2>err.txt || fail "--force back: $(cat err.txt)"
"$S" -q -o fm2/manifest.tsv d
# mgpu-shard's manifest into a reader that goes away: quiet, SIGPIPE's
# status, and the shards it wrote for that reader undone
rc=$(closed_pipe "$S" -q -d gone d)
[ ! -s err.txt ] || fail "mgpu-shard into a closed pipe printed: $(cat err.txt)"
[ "$rc" = 141 ] || fail "mgpu-shard into a closed pipe: exit $rc, want 141 (SIGPIPE)"
# mgpu-cache: the header table in each format; a closed pipe ends quietly.
"$C" -o c fm2/manifest.tsv --format markdown >c.md 2>err.txt || fail "cache: $(cat err.txt)"
grep -q "^mgpu-cache: 'c' built$" err.txt || fail "cache note: $(cat err.txt)"
grep -q '^| split | samples | shape |' c.md || fail "cache markdown: $(cat c.md)"
"$C" --info c --json | grep -q '^{"split":"train","samples":300,' || fail "--info --json"
rc=$(closed_pipe "$C" --info c)
[ ! -s err.txt ] || fail "closed pipe printed: $(cat err.txt)"
[ "$rc" = 141 ] || fail "mgpu-cache --info into a closed pipe: exit $rc, want 141 (SIGPIPE)"
if command -v mandoc >/dev/null; then
	mandoc -T lint -W warning "$SRC/man/mgpu-shard.1" "$SRC/man/mgpu-cache.1" "$SRC/man/mgpu.7" ||
		fail "man pages lint"
fi
exit 0
