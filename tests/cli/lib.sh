# lib.sh - shared helpers of the CLI tests (sourced, bash).
# Each test script runs under `set -eu`, works in a fresh temporary
# directory, and exits 0 (pass), 77 (skip, last line says why) or else fail.
set -eu
BIN=${MGPU_BUILD:-build}/bin
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
SRC=$PWD
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"

fail() { echo "FAIL: $*" >&2; exit 1; }

# need_numpy: set PY to a Python interpreter that imports numpy, or skip the
# test (exit 77) with the reason. python3 on PATH may be another interpreter
# (pyenv) than Debian's, which `make deps` gives python3-numpy; as a last
# resort numpy is installed with pip for the python3 on PATH.
find_numpy_python() {
	for p in ${MGPU_PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3; do
		command -v "$p" >/dev/null 2>&1 || continue
		"$p" -c 'import numpy' >/dev/null 2>&1 && { echo "$p"; return 0; }
	done
	command -v python3 >/dev/null 2>&1 || return 1
	python3 -m pip install -q numpy >/dev/null 2>&1 || return 1
	python3 -c 'import numpy' >/dev/null 2>&1 && echo python3
}
need_numpy() {
	PY=$(find_numpy_python) ||
		{ echo "no Python interpreter with numpy (tried python3, /usr/bin/python3, pip)"; exit 77; }
}

# expect STATUS SUBSTRING CMD...: CMD exits STATUS, prints nothing on stdout,
# exactly one line on stderr containing SUBSTRING (usage errors: two, the
# second "Try ...").
expect() {
	want=$1 sub=$2
	shift 2
	set +e
	"$@" >out.txt 2>err.txt
	got=$?
	set -e
	[ "$got" = "$want" ] || fail "$*: exit $got, want $want; stderr: $(cat err.txt)"
	grep -qF -- "$sub" err.txt || fail "$*: stderr lacks '$sub': $(cat err.txt)"
	[ ! -s out.txt ] || fail "$*: wrote to stdout: $(head -c 300 out.txt)"
	lines=$(wc -l <err.txt)
	if [ "$want" = 2 ]; then
		[ "$lines" = 2 ] && grep -q "^Try '" err.txt ||
			fail "$*: usage error is not 'message + Try' ($lines lines)"
	else
		[ "$lines" = 1 ] || fail "$*: $lines lines on stderr, want 1: $(cat err.txt)"
	fi
}

# help_man_agree PAGE HELPFILE...: the long options the help texts list
# are exactly those PAGE (man/PAGE) and mgpu(7), for the common ones,
# document in their .It lines.
help_man_agree() {
	page=$1
	shift
	sed -n 's/^  \(-[a-zA-Z], \)\{0,1\}--\([a-z0-9-]*\).*/\2/p' "$@" | sort -u >help-opts.txt
	grep -h '^\.It Fl' "$SRC/man/$page" "$SRC/man/mgpu.7" | grep -o 'Fl \\\{0,1\}-[a-z0-9-]*' |
		sed 's/^Fl \\\{0,1\}-//' | sort -u >man-opts.txt
	[ -s help-opts.txt ] || fail "no options found in $*"
	diff help-opts.txt man-opts.txt >opts-diff.txt ||
		fail "$page: options of --help (<) and of the man pages (>) differ: $(cat opts-diff.txt)"
}

# mkidx DIR N_TRAIN N_TEST SIDE CLASSES [BAD]: a small learnable IDX data set
# (class k brightens row band k). BAD: truncate|magic|label|none.
mkidx() {
	python3 - "$@" <<'PY'
import gzip, os, random, struct, sys
d, ntr, nte, side, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
bad = sys.argv[6] if len(sys.argv) > 6 else "none"
os.makedirs(d, exist_ok=True)
rnd = random.Random(7)
def images(n, labels):
    out = bytearray()
    for y in labels:
        for r in range(side):
            for c in range(side):
                v = rnd.randrange(0, 80)
                if r % k == y: v += 150
                out.append(min(v, 255))
    return bytes(out)
for name, n in (("train", ntr), ("t10k", nte)):
    labels = [rnd.randrange(k) for _ in range(n)]
    if bad == "label" and name == "train": labels[5] = k + 2
    img = struct.pack(">HBB", 0, 8, 3) + struct.pack(">III", n, side, side) + images(n, labels)
    lab = struct.pack(">HBB", 0, 8, 1) + struct.pack(">I", n) + bytes(labels)
    if bad == "truncate" and name == "train": img = img[:len(img) // 2]
    if bad == "magic" and name == "train": img = b"\x00\x00\x07\x03" + img[4:]
    with gzip.open(f"{d}/{name}-images-idx3-ubyte.gz", "wb") as f: f.write(img)
    with gzip.open(f"{d}/{name}-labels-idx1-ubyte.gz", "wb") as f: f.write(lab)
PY
}

# mkidx_big DIR N_TRAIN: a larger IDX set (28x28, 10 classes, 16 grey
# levels of noise) made fast, for runs that must last a while.
mkidx_big() {
	python3 - "$@" <<'PY'
import os, random, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
r = random.Random(3)
os.makedirs(d, exist_ok=True)
tab = bytes(i % 16 * 9 for i in range(256))
for name, k in (("train", n), ("t10k", max(n // 10, 1))):
    img = struct.pack(">HBBIII", 0, 8, 3, k, 28, 28) + r.randbytes(k * 784).translate(tab)
    lab = struct.pack(">HBBI", 0, 8, 1, k) + bytes(r.randrange(10) for _ in range(k))
    open(f"{d}/{name}-images-idx3-ubyte", "wb").write(img)
    open(f"{d}/{name}-labels-idx1-ubyte", "wb").write(lab)
PY
}

# interrupted SIG SECS STATUS CMD...: CMD, sent SIG after SECS, exits STATUS
# and says it was interrupted.
interrupted() {
	sig=$1 secs=$2 want=$3
	shift 3
	set +e
	timeout --preserve-status -s "$sig" "$secs" "$@" >out.txt 2>err.txt
	got=$?
	set -e
	[ "$got" = "$want" ] || fail "$* after SIG$sig: exit $got, want $want: $(cat err.txt)"
	grep -q "interrupted by SIG$sig; partial output removed" err.txt ||
		fail "$* after SIG$sig: $(cat err.txt)"
}

# text_idx DIR N_TRAIN N_TEST WIDTH SEED [PHRASE REPEAT]: windows of WIDTH
# bytes of a text as 1 x WIDTH IDX "images" with labels 0, the byte samples
# of a gpt (inputs 0..WIDTH-2, next-byte targets). The text is PHRASE
# repeated REPEAT times, or else 4000 words drawn from a small list (each
# learnable from the bytes before it); SEED draws the words and the windows.
text_idx() {
	python3 - "$@" <<'PY'
import os, random, struct, sys
d, ntr, nte, w, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
os.makedirs(d, exist_ok=True)
rnd = random.Random(seed)
if len(sys.argv) > 6:
    text = sys.argv[6].encode() * int(sys.argv[7])
else:
    words = [b"the ", b"quick ", b"brown ", b"fox ", b"jumps ", b"over ", b"a ", b"lazy ", b"dog. "]
    text = b"".join(words[rnd.randrange(len(words))] for _ in range(4000))
for name, n in (("train", ntr), ("t10k", nte)):
    rows = b"".join(text[s:s + w] for s in (rnd.randrange(len(text) - w) for _ in range(n)))
    with open(f"{d}/{name}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">HBBIII", 0, 8, 3, n, 1, w) + rows)
    with open(f"{d}/{name}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">HBBI", 0, 8, 1, n) + bytes(n))
PY
}

# wait_for_step FILE: until FILE (a run's stdout) holds a step record, at
# most 10 s.
wait_for_step() {
	for _ in $(seq 200); do grep -q '^step' "$1" 2>/dev/null && return 0; sleep 0.05; done
	fail "no step record in $1"
}

# closed_pipe CMD...: run CMD with standard output a pipe whose reader has
# already gone (so its first write fails, whatever its timing), stderr into
# err.txt; prints its status as a shell reports it (141: killed by SIGPIPE).
closed_pipe() {
	python3 - "$@" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
with open("err.txt", "w") as err:
    rc = subprocess.run(sys.argv[1:], stdout=w, stderr=err).returncode
print(128 - rc if rc < 0 else rc)
PY
}

# need_script: skip (exit 77) without script(1) (util-linux, bsdutils on
# Debian), which runs a command on a pseudo-terminal.
need_script() {
	command -v script >/dev/null 2>&1 ||
		{ echo "no script(1) (util-linux/bsdutils) to run a pseudo-terminal"; exit 77; }
}

# on_tty RAW 'SHELL COMMAND': the command on a pseudo-terminal of 150
# columns (stdin, stdout and stderr all the terminal unless it redirects
# them), killed after 120 s; every byte it wrote to the terminal goes to
# RAW as it comes. Returns the command's exit status.
on_tty() {
	raw=$1
	shift
	set +e
	timeout -k 5 120 script -q -e -c "stty cols 150 rows 50; $1" /dev/null </dev/null >"$raw"
	tty_rc=$?
	set -e
	return $tty_rc
}

# screen RAW: what a terminal shows after RAW's bytes, line by line: "\r"
# returns to the line's start, ESC [ K erases to its end, other bytes
# overwrite the line where the cursor stands.
screen() {
	python3 - "$1" <<'PY'
import re, sys
data = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
lines, cur, col = [], [], 0
for tok in re.findall(r"\x1b\[K|\r|\n|[^\r\n\x1b]+|\x1b", data):
    if tok == "\r":
        col = 0
    elif tok == "\n":
        lines.append("".join(cur).rstrip()); cur, col = [], 0
    elif tok == "\x1b[K":
        del cur[col:]
    else:
        for ch in tok:
            if col < len(cur): cur[col] = ch
            else: cur.append(ch)
            col += 1
if cur:
    lines.append("".join(cur).rstrip())
try:
    print("\n".join(lines))
except BrokenPipeError:  # a reader such as grep -q that has seen enough
    pass
PY
}

# aligned FILE: every line of FILE has its fields end in the columns of
# the first line's fields (a right-aligned table).
aligned() {
	awk 'function ends(s,   e, i, n) { e = ""; n = length(s)
		for (i = 1; i <= n; i++) if (substr(s, i, 1) != " " && (i == n || substr(s, i + 1, 1) == " ")) e = e " " i
		return e }
	NR == 1 { want = ends($0); next }
	ends($0) != want { print "line " NR ": " $0; bad = 1 }
	END { exit bad }' "$1"
}

# noisy_idx DIR N_TRAIN N_TEST: 8x8 images whose class (of 4) is the argmax
# of 4 fixed random projections, with a fifth of the labels drawn at random:
# learnable, but the loss stays well above 0.
noisy_idx() {
	python3 - "$@" <<'PY'
import gzip, os, random, struct, sys
d, ntr, nte = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
rnd = random.Random(5)
P = [[rnd.uniform(-1, 1) for _ in range(64)] for _ in range(4)]
for name, n in (("train", ntr), ("t10k", nte)):
    img, lab = bytearray(), bytearray()
    for _ in range(n):
        x = [rnd.randrange(256) for _ in range(64)]
        y = max(range(4), key=lambda c: sum(p * (v - 128) for p, v in zip(P[c], x)))
        lab.append(rnd.randrange(4) if rnd.random() < 0.2 else y)
        img += bytes(x)
    with gzip.open(f"{d}/{name}-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">HBBIII", 0, 8, 3, n, 8, 8) + img)
    with gzip.open(f"{d}/{name}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">HBBI", 0, 8, 1, n) + lab)
PY
}

# ckpt_maxdiff A B [bn]: the largest difference between the tensors of the
# last checkpoints of save dirs A and B (every tensor of model.safetensors, a
# cnn's BatchNorm running statistics included); fails when their names
# differ or, given bn, none is a running statistic.
ckpt_maxdiff() {
	python3 - "$1" "$2" "${3:-}" <<'PY'
import json, struct, sys
def load(d):
    step = open(d + "/latest").read().strip()
    b = open(f"{d}/{step}/model.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        s, e = v["data_offsets"]
        out[k] = struct.unpack(f"<{(e - s) // 4}f", b[8 + n + s:8 + n + e])
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
assert sys.argv[3] != "bn" or any(k.endswith("running_var") for k in a), sorted(a)
print(max(abs(x - y) for k in a for x, y in zip(a[k], b[k])))
PY
}

# need_pose_python: set PY to a Python that imports numpy and Pillow (what
# examples/make_pose_data.py needs), making a venv from PyPI in the build
# directory as a last resort; else skip (exit 77) saying why. Fashion-MNIST,
# which the frames are drawn from, must be there too.
need_pose_python() {
	[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
		{ echo "no Fashion-MNIST in /usr/share/datasets/fashion-mnist (dataset-fashion-mnist)"; exit 77; }
	venv=$SRC/${MGPU_BUILD:-build}/venv-pose
	PY=
	for p in ${MGPU_PYTHON:-} python3 /usr/bin/python3 "$venv/bin/python"; do
		command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, PIL' >/dev/null 2>&1 &&
			{ PY=$p; return 0; }
	done
	{ python3 -m venv "$venv" >/dev/null 2>&1 &&
	  "$venv/bin/pip" install -q numpy pillow >/dev/null 2>&1; } ||
		{ echo "numpy and Pillow: none installed (python3-numpy python3-pil) and no venv from PyPI"; exit 77; }
	PY=$venv/bin/python
}

# losses FILE: "STEP LOSS" for each step record of a run's stdout
# (mgpu-train --log-every 1), one a line.
losses() { awk -F '\t' '$1 == "step" { print $2, $4 }' "$1"; }

# same_losses A B: runs A and B (their stdout) logged the same steps, each
# loss within 1e-4 of the other (relative); prints the pairs that are not.
# What data parallelism must keep: 2 ranks x 8 train as 1 rank x 16.
same_losses() {
	paste -d ' ' <(losses "$1") <(losses "$2") | awk '
		{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $2) { print; bad = 1 } }
		END { exit bad }'
}

# bf16_resumed FULL PART: checkpoint directories of a --dtype bf16 run,
# FULL trained straight and PART to the same step through a resume, hold
# the same weights bit for bit; PART records --dtype bf16 in state.json
# and keeps its tensors fp32 (bf16 is arithmetic, not storage).
bf16_resumed() {
	cmp "$1/model.safetensors" "$2/model.safetensors" || fail "resumed bf16 weights differ"
	grep -q '"--dtype", "bf16"' "$2/state.json" ||
		fail "the checkpoint does not record --dtype bf16: $(cat "$2/state.json")"
	python3 - "$2/model.safetensors" <<'PY' || fail "bf16 checkpoint tensors are not F32"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
hdr = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
dt = {v["dtype"] for k, v in hdr.items() if k != "__metadata__"}
sys.exit(0 if dt == {"F32"} else 1)
PY
}
