# The build's configuration on a fresh machine: the targets that need the
# project's packages install them (mk/deps.sh) before the build is
# configured, so the first build has every optional part deps brings; and a
# compiler that appears later (mpicc, nvcc on PATH) reconfigures the build.
# Runs make on a copy of the Makefile and mk/ whose deps.sh only says it ran.
. tests/cli/lib.sh
command -v make >/dev/null || { echo "no make"; exit 77; }
mkdir p p/mk
cp "$SRC/Makefile" p/
cp "$SRC/mk/configure.sh" p/mk/
printf 'echo "deps: ran" >&2\n' >p/mk/deps.sh
cd p
make --no-print-directory CUDA=0 MPI=auto deps >out.txt 2>err.txt || fail "make deps: $(cat err.txt)"
first=$(grep -m1 -E '^(deps|configure):' err.txt) || fail "neither deps nor configure ran: $(cat err.txt)"
[ "$first" = "deps: ran" ] || fail "the build was configured before deps ran: $(cat err.txt)"
grep -q '^configure:' err.txt || fail "make deps did not configure: $(cat err.txt)"

# nothing changed: no reconfiguration
make --no-print-directory CUDA=0 MPI=auto help >out.txt 2>err.txt
grep -q '^configure:' err.txt && fail "reconfigured with nothing changed: $(cat err.txt)"
# an mpicc that was not there (first on PATH): configure runs again
mkdir bin
printf '#!/bin/sh\nexit 1\n' >bin/mpicc
chmod +x bin/mpicc
PATH=$PWD/bin:$PATH make --no-print-directory CUDA=0 MPI=auto help >out.txt 2>err.txt
grep -q '^configure:' err.txt || fail "a new mpicc on PATH did not reconfigure: $(cat err.txt)"
exit 0
