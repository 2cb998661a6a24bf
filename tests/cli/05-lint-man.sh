# make lint-man (mk/lint-man.sh): the man pages pass mandoc's lint and the
# scan of their rendered text; a page whose Fl macro swallows the prose
# after it ("-evaluates -it -on", which mandoc accepts silently) fails,
# named with the rendered line.
. tests/cli/lib.sh
command -v mandoc >/dev/null || { echo "no mandoc (make deps installs it)"; exit 77; }
sh "$SRC/mk/lint-man.sh" >out.txt 2>&1 || fail "the man pages: $(cat out.txt)"
cat >bad.1 <<'MAN'
.Dd November 26, 2026
.Dt BAD 1
.Os
.Sh NAME
.Nm bad
.Nd a page whose flag takes the prose
.Sh DESCRIPTION
.Nm
reads its input (see
.Fl \-model ) , evaluates it on a seeded validation split
and stops.
MAN
mandoc -T lint -W warning bad.1 >lint.txt 2>&1 || fail "mandoc's lint alone catches it: $(cat lint.txt)"
set +e
sh "$SRC/mk/lint-man.sh" "$PWD/bad.1" >out.txt 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "a swallowed sentence passed: exit $rc: $(cat out.txt)"
grep -q 'bad.1: rendered line [0-9]*: stray flags "-evaluates -it"' out.txt || fail "message: $(cat out.txt)"
exit 0
