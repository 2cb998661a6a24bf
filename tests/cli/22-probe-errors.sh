# mgpu-probe: malformed nvidia-smi CSV gives one line naming the file, the
# line and the problem, exit 1, nothing on stdout.
. tests/cli/lib.sh
P=$BIN/mgpu-probe
D=$SRC/tests/data/smi
expect 1 "'$D/bad-missing-column.csv' line 3: 7 fields, the header has 8" \
	"$P" --from "$D/bad-missing-column.csv"
expect 1 "'$D/bad-noheader.csv' line 1: 7 fields, expected 8 (index, uuid, name" \
	"$P" --from "$D/bad-noheader.csv" --ids
expect 1 "'$D/bad-memory.csv' line 2: memory.total 'twelve MiB' is not a number of MiB" \
	"$P" --from "$D/bad-memory.csv"
expect 1 "'$D/bad-header.csv' line 1: missing column 'memory.total' in the header" \
	"$P" --from "$D/bad-header.csv"
expect 1 "'$D/empty.csv': empty input" "$P" --from "$D/empty.csv"
expect 1 "'standard input': empty input" "$P" --from - </dev/null
expect 1 "'missing.csv': cannot open" "$P" --from missing.csv
printf 'index, memory.total\n0, 1\n0, 2\n' >dup.csv
expect 1 "'dup.csv' line 3: GPU index 0 listed twice" "$P" --from dup.csv
head -c 300 /dev/urandom | tr -d '\n,' | tr '\000' '\001' >bin.csv
expect 1 "'bin.csv' line 1:" "$P" --from bin.csv
exit 0
