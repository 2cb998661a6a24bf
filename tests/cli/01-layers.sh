# The layers of the tree depend one way (docs/ARCHITECTURE.md):
#   core <- ops <- data <- gpu <- comm <- model <- train <- bench <- tools
# A file of lib/LAYER may include its own layer and those to its left;
# tools/ and the bench/ programs may include any of lib/; lib never
# includes tools. Checked by reading every #include of lib/, tools/ and
# bench/; the checker is first shown to catch includes that point back.
. tests/cli/lib.sh
layers="core ops data gpu comm model train bench tools"

rank() { # rank LAYER: its position in $layers, or -1
	i=0
	for l in $layers; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}

# layer_of FILE: the layer a source file belongs to (bench/ programs are tools)
layer_of() {
	case $1 in
	lib/*) f=${1#lib/}; echo "${f%%/*}" ;;
	*) echo tools ;;
	esac
}

# violations ROOT: one line per include of ROOT's sources against the order
violations() {
	(cd "$1" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
		--include='*.c' --include='*.h' --include='*.cu' lib tools bench 2>/dev/null) |
	while IFS= read -r hit; do
		file=${hit%%:*}
		inc=${hit#*\"}
		inc=${inc%%\"*}
		from=$(layer_of "$file")
		[ "$(rank "$from")" -ge 0 ] || { echo "$file: lib/$from is in no layer"; continue; }
		case $inc in
		config.h) continue ;;
		../*) [ "$from" = tools ] && continue
		      echo "$file: includes $inc (lib never includes tools)"; continue ;;
		*/*) to=${inc%%/*} ;;
		*) continue ;; # a header of the file's own directory
		esac
		if [ "$(rank "$to")" -lt 0 ]; then
			echo "$file: includes $inc of no layer"
		elif [ "$(rank "$to")" -gt "$(rank "$from")" ]; then
			echo "$file: includes $inc ($from may not depend on $to)"
		fi
	done | sort -u
}

# The checker catches what it must: a back arrow, lib reaching into tools,
# a directory placed in no layer; it lets the forward arrows pass.
mkdir -p fake/lib/comm fake/lib/core fake/lib/train fake/lib/model fake/lib/ops fake/lib/dist \
	fake/tools/t fake/bench
printf '#include "train/sync.h"\n' >fake/lib/comm/a.c
printf '#include "core/err.h"\n#include "ops/ops.h"\n' >fake/lib/core/b.h
printf '#include "../../tools/common.h"\n' >fake/lib/ops/c.c
printf '#include "comm/shm.h"\n#include "data/loader.h"\n#include "config.h"\n' >fake/lib/train/d.c
printf '#include "model/spec.h"\n#include "train/optim.h"\n' >fake/lib/model/f.c
printf '#include "core/err.h"\n' >fake/lib/dist/e.c
printf '#include "../common.h"\n#include "train/train.h"\n#include "bench/tab.h"\n' >fake/tools/t/main.c
printf '#include "model/model.h"\n' >fake/bench/overhead.c
violations fake >fake.txt
cat >want.txt <<'EOF'
lib/comm/a.c: includes train/sync.h (comm may not depend on train)
lib/core/b.h: includes ops/ops.h (core may not depend on ops)
lib/dist/e.c: lib/dist is in no layer
lib/model/f.c: includes train/optim.h (model may not depend on train)
lib/ops/c.c: includes ../../tools/common.h (lib never includes tools)
EOF
diff want.txt fake.txt >/dev/null || fail "the checker is wrong on a made-up tree: $(cat fake.txt)"

violations "$SRC" >bad.txt
[ ! -s bad.txt ] || fail "includes against the layer order:
$(cat bad.txt)"
