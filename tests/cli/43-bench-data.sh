# mgpu-bench data: cache decode and loader rows for a cache, loader rows
# only (and a note) for an IDX directory.
. tests/cli/lib.sh
B="$BIN/mgpu-bench"
mkidx d 900 100 8 4
"$BIN/mgpu-shard" -q -o shards/manifest.tsv d
"$BIN/mgpu-cache" -q -o cache shards/manifest.tsv >/dev/null
"$B" data cache --prefetch 0,2 --repeat 2 --batch-size 50 >c.tsv 2>err.txt || fail "cache: $(cat err.txt)"
[ ! -s err.txt ] || fail "stderr: $(cat err.txt)"
head -n 1 c.tsv | grep -qx 'test	source	prefetch	batch_size	rows	data_bytes	time_s	samples_per_s	gbps	repeats	blas_core	blas_threads' ||
	fail "header: $(head -n 1 c.tsv)"
awk -F '\t' 'NR == 2 && $1 == "decode" && $2 == "cache" && $5 == 1000 && $6 >= 64000 && $7 > 0 { ok++ }
	NR > 2 && $1 == "loader" && $4 == 50 && $5 == 900 && $6 == 57600 && $10 == 2 { ok++; p = p $3 }
	END { exit !(ok == 3 && p == "02") }' c.tsv || fail "rows: $(cat c.tsv)"
# blas_core is OpenBLAS's choice under the run's environment, as mgpu-probe sees it
want=$(OPENBLAS_CORETYPE=Sandybridge "$BIN/mgpu-probe" -q --system | awk -F '\t' '$2 == "blas_core" { print $3 }')
got=$(OPENBLAS_CORETYPE=Sandybridge "$B" data cache --prefetch 0 --repeat 1 | awk -F '\t' 'NR == 2 { print $11 "/" $12 }')
[ "$got" = "${want%% *}/1" ] || fail "blas columns: '$got', want '${want%% *}/1'"
"$B" data d --prefetch 1 --repeat 1 --json >i.json 2>err.txt || fail "IDX: $(cat err.txt)"
grep -q "'d' is not a cache (IDX): no decode row" err.txt || fail "note: $(cat err.txt)"
grep -q '^{"test":"loader","source":"IDX","prefetch":1,"batch_size":128,"rows":900,' i.json ||
	fail "json: $(cat i.json)"
exit 0
