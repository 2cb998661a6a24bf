#!/bin/sh
# fetch-basicmotions.sh DIR - the UEA BasicMotions data set (smart-watch
# accelerometer and gyroscope, 6 channels x 100 steps, 4 activities, 40
# train and 40 test series) into DIR/BasicMotions_TRAIN.ts and
# DIR/BasicMotions_TEST.ts, taken from the aeon wheel on PyPI, which ships
# it (pip download installs nothing). A DIR that already holds both files
# is left alone; the files appear together or not at all. Exits 1 with the
# reason when pip or the network is missing.
set -eu
dir=${1:?usage: fetch-basicmotions.sh DIR}
[ -s "$dir/BasicMotions_TRAIN.ts" ] && [ -s "$dir/BasicMotions_TEST.ts" ] && exit 0
py=${PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/basicmotions.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
if ! "$py" -m pip download -q --no-deps --only-binary=:all: -d "$tmp/wheel" aeon \
	>"$tmp/pip.log" 2>&1; then
	echo "fetch-basicmotions: pip download aeon failed: $(tail -n 1 "$tmp/pip.log")" >&2
	exit 1
fi
"$py" - "$tmp/wheel" "$tmp/out" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "aeon-*.whl"))[0]
os.makedirs(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for part in ("TRAIN", "TEST"):
        name = f"aeon/datasets/data/BasicMotions/BasicMotions_{part}.ts"
        with open(os.path.join(sys.argv[2], os.path.basename(name)), "wb") as f:
            f.write(z.read(name))
PY
mkdir -p "$dir"
mv "$tmp/out/BasicMotions_TRAIN.ts" "$tmp/out/BasicMotions_TEST.ts" "$dir/"
echo "fetch-basicmotions: $dir/BasicMotions_TRAIN.ts, $dir/BasicMotions_TEST.ts" >&2
