# .ci/run runs the README's test command (make test WERROR=1) through
# fresh.sh, on a new Debian 12 root, and passes on its exit status; when the
# root cannot be built (fresh.sh exits 3) it warns loudly and runs the
# command on the host. A fake fresh.sh and a Makefile whose test target only
# says it ran stand in for the real ones.
. tests/cli/lib.sh
[ "$(id -u)" = 0 ] || { echo "not root: .ci/run falls back to the host at once"; exit 77; }
mkdir -p p/.ci bin
cp "$SRC/.ci/run" p/.ci/run
printf 'test:\n\t@echo "host make test WERROR=$(WERROR)"\n' >p/Makefile
printf '#!/bin/sh\nexit 0\n' >bin/mmdebstrap
chmod +x bin/mmdebstrap
export PATH=$PWD/bin:$PATH
printf 'echo "fresh: $*"\nexit ${FAKE_RC:-0}\n' >fresh.sh
export MGPU_FRESH=$PWD/fresh.sh

sh p/.ci/run >out.txt 2>err.txt || fail ".ci/run: $(cat err.txt)"
[ "$(cat out.txt)" = "fresh: make test WERROR=1" ] || fail "not run through fresh.sh: $(cat out.txt)"
grep -q WARNING err.txt && fail "warned with a fresh root: $(cat err.txt)"

# a failure on the fresh root is CI's failure, not a reason to use the host
set +e
FAKE_RC=1 sh p/.ci/run >out.txt 2>err.txt
rc=$?
set -e
[ "$rc" = 1 ] || fail "fresh.sh exit 1: .ci/run exits $rc"
grep -q '^host' out.txt && fail "ran on the host after a failure on the fresh root"

# the root cannot be built: a loud warning, then the host
FAKE_RC=3 sh p/.ci/run >out.txt 2>err.txt || fail "fallback: $(cat err.txt)"
grep -q "^host make test WERROR=1$" out.txt || fail "fallback did not run on the host: $(cat out.txt)"
grep -q "WARNING: .*could not build the Debian 12 root" err.txt || fail "no warning: $(cat err.txt)"
grep -q "NOT the" err.txt || fail "the warning does not say this is not the fresh check: $(cat err.txt)"
MGPU_FRESH=$PWD/none.sh sh p/.ci/run >out.txt 2>err.txt || fail "no fresh.sh: $(cat err.txt)"
grep -q "^host" out.txt && grep -q "WARNING: no .*none.sh" err.txt || fail "no fresh.sh: $(cat err.txt)"
exit 0
