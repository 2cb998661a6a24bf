# Every CLI script has its own number (NN, or NN and a letter: 19, 19a,
# 19b), so that a number names one script in a report, a note or a
# commit; the checker is first shown to catch a number given twice.
. tests/cli/lib.sh

# twice ROOT: the numbers that more than one script of ROOT/tests/cli holds
twice() {
	for f in "$1"/tests/cli/[0-9]*.sh; do
		[ -f "$f" ] || continue
		f=${f##*/}
		echo "${f%%-*}"
	done | sort | uniq -d
}

mkdir -p fake/tests/cli
touch fake/tests/cli/19-a.sh fake/tests/cli/19a-b.sh fake/tests/cli/19b-c.sh \
	fake/tests/cli/19b-d.sh fake/tests/cli/20-e.sh
[ "$(twice fake)" = 19b ] || fail "the checker is wrong on a made-up tree: $(twice fake)"

dup=$(twice "$SRC")
[ -z "$dup" ] || fail "CLI scripts share a number: $(for n in $dup; do
	ls "$SRC"/tests/cli/"$n"-*.sh | sed 's|.*/||' | tr '\n' ' '; done)"
