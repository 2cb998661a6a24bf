# The backend interface is ops.h's table and nothing else (docs/ARCHITECTURE.md):
# outside lib/ops no file reads struct mgpu_ops's host_memory (callers ask
# mgpu_ops_can), calls into the cpu backend's internals (mgpu_cpu_*, but the
# selftest's note of which bf16 GEMM the cpu runs and the probe that
# decides it, which tests/unit/test_bf16_probe.c plants mutants in) or includes the backends'
# internal headers (loops.h, cuda_kern.h, attn_tile.h). Checked by reading
# the sources of lib/, tools/, bench/ and tests/; the checker is first shown
# to catch each kind of breach.
. tests/cli/lib.sh

# breaches ROOT: one line per use of a backend's insides outside ROOT/lib/ops
breaches() {
	(cd "$1" && grep -rnE \
		-e '(->|\.)host_memory\b' \
		-e '\bmgpu_cpu_[a-z0-9_]+[[:space:]]*\(' \
		-e '#[[:space:]]*include[[:space:]]*"ops/(loops|cuda_kern|attn_tile)\.h"' \
		--include='*.c' --include='*.h' --include='*.cu' lib tools bench tests 2>/dev/null) |
	grep -v '^lib/ops/' | grep -vE 'mgpu_cpu_bf16_(gemm_path|probe)\b' || true
}

# The checker catches each kind in a tree made to breach it.
mkdir -p bad/lib/train bad/tools/x bad/bench
printf 'int f(struct mgpu_dev *d) { return d->ops->host_memory; }\n' >bad/lib/train/a.c
printf 'void g(void) { mgpu_cpu_sgd_sum(0, 0, 0, 0, 0, 0); }\n' >bad/tools/x/b.c
printf '#include "ops/loops.h"\n' >bad/bench/c.c
printf 'int h(const struct mgpu_ops *o) { return mgpu_ops_can(o, MGPU_CAP_HOST_MEMORY); }\n' \
	>bad/lib/train/ok.c
breaches bad >got.txt
[ "$(wc -l <got.txt)" = 3 ] || fail "checker found $(wc -l <got.txt) breaches, want 3: $(cat got.txt)"
for f in lib/train/a.c tools/x/b.c bench/c.c; do
	grep -q "^$f:" got.txt || fail "checker missed $f"
done
grep -q '^lib/train/ok.c' got.txt && fail "checker flagged mgpu_ops_can"

breaches "$SRC" >real.txt
[ ! -s real.txt ] || fail "backend internals used outside lib/ops: $(cat real.txt)"
exit 0
