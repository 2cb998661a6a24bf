# The smaller edges of issue 19: a spec file of more than 4 KiB (a long
# comment) is read; --model /dev/zero stops at a bound instead of reading
# until memory runs out; an option given twice in a spec is refused; a
# --context no gpt can take is refused at shard time; --grad-dtype bf16 in
# a job the cpu sync cannot sum in bf16 (mpirun's ranks, several nodes) is
# a usage error before any rank starts; a checkpoint whose state.json was
# edited to another spec of the same tensor shapes is refused against the
# weights' own metadata; with one rank -v does not claim a sync backend.
. tests/cli/lib.sh
M=$BIN/mgpu-train
text_idx d 400 32 17 5
gpt="--data d --batch-size 16 --max-steps 2 -q"

{ printf '# '; head -c 5000 /dev/zero | tr '\0' x; printf '\ngpt:layers=1\nheads=2 dim=16\nctx=16\n'; } >long.spec
"$M" $gpt --model long.spec >/dev/null 2>err.txt || fail "a spec file with a long comment: $(cat err.txt)"
expect 2 "'/dev/zero': more than 1048576 bytes: not a model spec file" "$M" $gpt --model /dev/zero
expect 2 "--model: option 'ctx' given twice" "$M" $gpt --model gpt:layers=1,heads=2,dim=16,ctx=32,ctx=16
expect 2 "--model: option 'act' given twice" "$M" $gpt --model mlp:17-8-3,act=gelu,act=relu
printf 'some text to cut\n' >t.txt
expect 2 "--context: " "$BIN/mgpu-shard" --text --context 65537 -o sh/m.tsv t.txt
expect 2 "--grad-dtype bf16 needs sync backend cpu with CPU ranks on one node, or nccl; not cpu across nodes" \
	env MASTER_ADDR=127.0.0.1 "$M" $gpt --model gpt:layers=1,heads=2,dim=16,ctx=16 \
	--cpu-ranks 2 --nnodes 2 --grad-dtype bf16
if "$M" -V -v | grep -q 'mpi=1'; then
	expect 2 "not --sync-backend mpi" env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 \
		OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
		"$M" $gpt --model gpt:layers=1,heads=2,dim=16,ctx=16 --sync-backend mpi \
		--grad-dtype bf16
fi

# heads 2 -> 4 keeps every tensor's shape
"$M" $gpt --model gpt:layers=1,heads=2,dim=16,ctx=16 --save-dir ck >/dev/null
st=ck/$(cat ck/latest)/state.json
sed 's/heads=2/heads=4/g' "$st" >st.tmp && mv st.tmp "$st"
grep -q 'heads=4' "$st" || fail "the edit did not take: $(cat "$st")"
expect 1 "model.safetensors': the weights were saved for model 'gpt:layers=1,heads=2,dim=16,ctx=16,vocab=256" \
	"$M" --resume ck --max-steps 3 -q

"$M" $gpt --model gpt:layers=1,heads=2,dim=16,ctx=16 -v >/dev/null 2>err.txt
grep -q '^sync-backend = ' err.txt || fail "-v printed no settings: $(cat err.txt)"
! grep -q '^sync-backend = cpu' err.txt || fail "one rank, -v claims sync cpu: $(cat err.txt)"
exit 0
