# CSV labels that are words: mgpu-shard numbers them in sorted order and
# the manifest records the names; mgpu-cache keeps them; mgpu-train takes
# the class count from them (mlp:auto-...-auto), records them in the
# checkpoint, and --per-class prints one row per class with its name and
# test accuracy. Sources whose words differ are joined.
. tests/cli/lib.sh
python3 - <<'PY'
import random
r = random.Random(1)
names = ["WALKING", "LAYING", "SITTING"]
def write(path, n, classes):
    with open(path, "w") as f:
        f.write("a,b,c,activity\n")
        for i in range(n):
            y = classes[i % len(classes)]
            f.write(",".join(str(r.random() + 3 * (j == names.index(y))) for j in range(3)))
            f.write(",%s\n" % y)
write("har.csv", 240, names)
write("two.csv", 60, ["WALKING", "LAYING"])
PY
"$BIN/mgpu-shard" -q --label-column activity --test-fraction 0.25 -o sh/manifest.tsv har.csv ||
	fail "shard"
[ "$(grep '^#class' sh/manifest.tsv)" = "$(printf '#class\t0\tLAYING\n#class\t1\tSITTING\n#class\t2\tWALKING')" ] ||
	fail "manifest names: $(cat sh/manifest.tsv)"
"$BIN/mgpu-cache" -q -o c sh/manifest.tsv >/dev/null || fail "cache"
"$BIN/mgpu-cache" --info c | awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ print $c["class_names"] }' | sort -u >names.txt
[ "$(cat names.txt)" = "LAYING,SITTING,WALKING" ] || fail "mgpu-cache --info names: $(cat names.txt)"
"$BIN/mgpu-train" --data c --model mlp:auto-16-auto --epochs 3 --batch-size 8 --per-class \
	--save-dir ck >out.tsv 2>err.txt || fail "train: $(cat err.txt)"
grep -q "model mlp:3-16-3,act=relu;" err.txt || fail "auto classes: $(cat err.txt)"
python3 - out.tsv <<'PY' || fail "per-class rows: $(cat out.tsv)"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cls = [r for r in rows if r["kind"] == "class"]
assert [(r["class"], r["name"]) for r in cls] == [("0", "LAYING"), ("1", "SITTING"), ("2", "WALKING")], cls
assert sum(int(r["samples"]) for r in cls) == 60, cls
summ = [r for r in rows if r["kind"] == "summary"][0]
acc = sum(float(r["test_acc"]) * int(r["samples"]) for r in cls) / 60
assert abs(acc - float(summ["test_acc"])) < 1e-5, (acc, summ["test_acc"])
PY
grep -q '"classes": \["LAYING", "SITTING", "WALKING"\]' "ck/$(cat ck/latest)/state.json" ||
	fail "checkpoint: $(cat "ck/$(cat ck/latest)/state.json")"
grep -aq '"mgpu_classes":"\[\\"LAYING\\", \\"SITTING\\", \\"WALKING\\"\]"' "ck/$(cat ck/latest)/model.safetensors" ||
	fail "safetensors metadata: $(head -c 600 "ck/$(cat ck/latest)/model.safetensors")"
# on a terminal the classes are aligned lines after the summary, by name
if command -v script >/dev/null 2>&1; then
	on_tty raw "$BIN/mgpu-train --data c --model mlp:auto-16-auto --epochs 1 --batch-size 8 --per-class" ||
		fail "terminal: exit $tty_rc: $(screen raw)"
	screen raw >scr
	grep -Eq '^class +name +samples +test_acc$' scr || fail "no class header: $(cat scr)"
	grep -Eq '^ +2 +WALKING +[0-9]+ +[0-9.]+%$' scr || fail "no WALKING line: $(cat scr)"
fi
# the same from the manifest itself (no cache), on 2 ranks
"$BIN/mgpu-train" --data sh --model mlp:auto-16-auto --epochs 1 --batch-size 8 --per-class \
	--cpu-ranks 2 -q >two.tsv || fail "manifest, 2 ranks"
[ "$(grep -c '^class	' two.tsv)" = 3 ] || fail "2 ranks: $(cat two.tsv)"
# without --per-class no class columns
"$BIN/mgpu-train" --data c --model mlp:auto-16-auto --epochs 1 --batch-size 8 -q >plain.tsv
head -n 1 plain.tsv | tr '\t' '\n' | grep -qx 'class' && fail "class columns without --per-class"

# two sources, words joined: SITTING only in one of them
"$BIN/mgpu-shard" -q --label-column activity -o j/manifest.tsv two.csv har.csv || fail "join"
[ "$(grep -c '^#class' j/manifest.tsv)" = 3 ] || fail "joined names: $(cat j/manifest.tsv)"
printf 'a,b,c,activity\n1,2,3,0\n' >num.csv
expect 1 "'num.csv': its labels are numbers, an earlier source's are words" \
	"$BIN/mgpu-shard" -q --label-column activity -o k/manifest.tsv har.csv num.csv
expect 2 "--per-class needs an mlp" "$BIN/mgpu-train" --model gpt:layers=1,heads=1,dim=8,ctx=8 --per-class
exit 0
