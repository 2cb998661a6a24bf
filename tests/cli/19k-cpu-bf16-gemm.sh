# The cpu backend's bf16 GEMM (lib/ops/bf16_cpu.c): on a CPU with
# AVX512-BF16 or AMX it runs on oneDNN's matmul, which --selftest names,
# elsewhere on the widened cblas_sgemm, named too. MGPU_CPU_BF16_GEMM picks
# one path: onednn puts every product on oneDNN, small ones too, and then
# the conformance rows of bf16 gemm against ref (awkward shapes, every
# transpose pair, padded leading dimensions, beta 0 over NaN, strided
# batches) pass with oneDNN running them, none on a reference kernel;
# sgemm names and runs the fallback; a bf16 MLP trains alike on both; an
# unknown value is an error.
. tests/cli/lib.sh
B=$(dirname "$BIN")
has=0
grep -qE '^flags.*[[:space:]](avx512_bf16|amx_bf16)([[:space:]]|$)' /proc/cpuinfo && has=1
[ -z "${ONEDNN_MAX_CPU_ISA:-}${DNNL_MAX_CPU_ISA:-}" ] ||
	{ echo "oneDNN's ISA is capped by the environment"; exit 77; }

# path VALUE: the bf16 GEMM --selftest names under MGPU_CPU_BF16_GEMM=VALUE
path() {
	MGPU_CPU_BF16_GEMM=$1 "$BIN/mgpu-train" --selftest >/dev/null 2>err.txt ||
		fail "selftest with MGPU_CPU_BF16_GEMM=$1 failed: $(tail -n 3 err.txt)"
	sed -n 's/^mgpu-train: selftest: the cpu bf16 GEMM runs on //p' err.txt
}
p=$(path auto)
if [ $has = 1 ]; then
	case $p in
	"oneDNN matmul (AVX512-BF16); products under 16384 multiply-adds on "*) ;;
	"oneDNN matmul (AMX); products under 16384 multiply-adds on "*) ;;
	*) fail "this CPU has AVX512-BF16 or AMX, the bf16 GEMM runs on '$p'" ;;
	esac
else
	case $p in *oneDNN*) fail "no AVX512-BF16 nor AMX here, yet the bf16 GEMM is '$p'" ;; esac
fi
p=$(path sgemm)
[ "$p" = "cblas_sgemm on widened inputs (MGPU_CPU_BF16_GEMM=sgemm)" ] ||
	fail "MGPU_CPU_BF16_GEMM=sgemm runs on '$p'"
p=$(path onednn)
if [ $has = 1 ]; then
	case $p in "oneDNN matmul (AVX512-BF16)" | "oneDNN matmul (AMX)") ;;
	*) fail "MGPU_CPU_BF16_GEMM=onednn runs on '$p'" ;; esac
else
	case $p in *"neither AVX512-BF16 nor AMX"*) ;;
	*) fail "MGPU_CPU_BF16_GEMM=onednn without AVX512-BF16 runs on '$p'" ;; esac
fi

# The conformance rows, every product on oneDNN where the CPU can; its
# verbose log shows each primitive made and run.
MGPU_CPU_BF16_GEMM=onednn ONEDNN_VERBOSE=1 "$B/tests/ops/conformance" cpu/gemm_bf16 \
	cpu/gemm_strided test_compare_cpu >conf.txt 2>&1 || fail "conformance: $(grep -v '^onednn' conf.txt)"
[ "$(grep -c '^PASS ' conf.txt)" = 3 ] || fail "conformance: $(grep -v '^onednn' conf.txt)"
if [ $has = 1 ]; then
	runs=$(grep -c '^onednn_verbose,exec,cpu,matmul,' conf.txt || true)
	[ "$runs" -ge 100 ] || fail "only $runs oneDNN matmuls ran the conformance rows"
	! grep '^onednn_verbose,.*,matmul,ref' conf.txt || fail "a reference matmul ran"
fi

# A bf16 MLP on oneDNN and on the fallback: the same arithmetic but for the
# order of the sums, so every 10-step mean loss within 0.5%.
noisy_idx nd 2000 200
mlp() { MGPU_CPU_BF16_GEMM=$1 "$BIN/mgpu-train" --data nd --model mlp:64-64-32-4,act=gelu \
	--max-steps 60 --epochs 10 --log-every 1 -q --batch-size 32 --optimizer adamw \
	--lr 0.003 --dtype bf16 | awk -F '\t' '$1 == "step" { print $2, $4 }'; }
mlp onednn >a.txt
mlp sgemm >b.txt
[ "$(wc -l <a.txt)" = 60 ] && [ "$(wc -l <b.txt)" = 60 ] || fail "steps: $(wc -l <a.txt) $(wc -l <b.txt)"
paste -d ' ' a.txt b.txt | awk '
	{ a += $2; b += $4 }
	NR % 10 == 0 { d = (a > b ? a - b : b - a) / b; if (d > 0.005) { print NR, a, b; bad = 1 }
		if (NR == 10) first = a; last = a; a = b = 0 }
	END { if (last >= first) { print "no progress", first, last; bad = 1 }; exit bad }' ||
	fail "the bf16 MLP on oneDNN strays from the fallback's"

MGPU_CPU_BF16_GEMM=bogus expect 1 \
	"MGPU_CPU_BF16_GEMM: 'bogus' is not one of auto|onednn|sbgemm|sgemm" \
	"$BIN/mgpu-train" --data nd --model mlp:64-8-4 --dtype bf16 --max-steps 1 -q
exit 0
