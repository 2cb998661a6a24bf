# torch_venv.sh - sourced by the scripts that run PyTorch on CPU ranks beside
# mgpu (bench/lm.sh, bench/cnn.sh); VENV names the virtual environment
# (BUILD/torch-venv).
#
# torch_python: print the venv's python once it imports torch (installing
# torch there from PyPI when missing); else say why on stderr and fail, so
# that a machine without a network still gets the mgpu rows.
torch_python() {
	if ! "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
		echo "$(basename "$0"): installing PyTorch (CPU use) from PyPI into $VENV" >&2
		{ [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"; } &&
			"$VENV/bin/pip" install -q torch numpy >&2 ||
			{ echo "$(basename "$0"): PyTorch not installed (no network or pip failed): skipped" >&2;
			  return 1; }
	fi
	echo "$VENV/bin/python"
}
