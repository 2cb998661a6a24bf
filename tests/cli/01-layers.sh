# The layers of the tree depend one way (docs/ARCHITECTURE.md):
#   core <- ops <- data <- gpu <- comm <- model <- train <- bench <- tools
# A file of lib/LAYER may include its own layer and those to its left;
# tools/ and the bench/ programs may include any of lib/; lib never
# includes tools. Checked by reading every #include of lib/, tools/ and
# bench/; the checker is first shown to catch includes that point back.
# Inside a folder no two files depend on each other, through any others:
# a file (a source and its header of the same name: a.c, a.cu and a.h)
# depends on another when its source includes the other's header, or
# calls a function the other's source defines (read from the build's
# objects with nm). The checker is first shown to catch such cycles.
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

# edges ROOT [OBJ]: "FROM TO WHY" for each arrow between two units of one
# folder. A unit is a source and its header (a.c, a.cu and a.h are unit
# a); a unit points to another when its source includes the other's
# header, or (OBJ: a build's obj/ directory) when its object calls a
# function the other's object defines. A header's own includes (types)
# and references to data (a table naming its entries) are no arrows.
edges() {
	(cd "$1" && grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
		--include='*.c' --include='*.cu' lib tools bench 2>/dev/null) |
	while IFS= read -r hit; do
		file=${hit%%:*}
		inc=${hit#*\"}
		inc=${inc%%\"*}
		dir=${file%/*}
		case $inc in
		../*) continue ;; # another folder
		*/*) to=lib/$inc ;;
		*) to=$dir/$inc ;;
		esac
		if [ "${to%/*}" = "$dir" ] && [ "${to%.*}" != "${file%.*}" ]; then
			echo "${file%.*} ${to%.*} includes $inc"
		fi
	done
	[ -n "${2:-}" ] || return 0
	# a missing folder (a made-up tree has no bench/) is no error
	(cd "$1" && find lib tools bench -name '*.c' -o -name '*.cu' 2>/dev/null || :) >units.txt
	# an object older than its source is stale (a CUDA build's objects
	# left in a build directory that now builds without CUDA): not read
	root=$(cd "$1" && pwd)
	(cd "$2" && find lib tools bench -name '*.o' 2>/dev/null | while IFS= read -r o; do
		s=${o%.o}
		case $s in *.cu) ;; *) s=$s.c ;; esac
		[ "$root/$s" -nt "$o" ] || echo "$o"
	done | xargs -r nm -gA 2>/dev/null || :) |
	awk 'FNR == NR { sub(/\.cu?$/, ""); src[$0] = 1; next }
	     { f = $1; sub(/:.*/, "", f); sub(/\.o$/, "", f); sub(/\.cu$/, "", f)
	       if (!(f in src)) next # the object of a source that is gone
	       d = f; sub(/\/[^\/]*$/, "", d) }
	     $2 == "U" { n++; user[n] = f; used[n] = d SUBSEP $3; name[n] = $3 }
	     $2 == "T" { def[d SUBSEP $3] = f }
	     END { for (i = 1; i <= n; i++)
			if (used[i] in def && def[used[i]] != user[i])
				print user[i], def[used[i]], "calls", name[i] }' units.txt -
}

# cycles ROOT [OBJ]: "A -> B: WHY" for each arrow of each cycle, of
# includes or of calls (a family's header, such as ops_cpu.h, declares
# what the family's sources define: including it and calling them is no
# cycle)
cycles() {
	edges "$@" | sort -u >edges.txt
	for kind in includes calls; do
		awk -v k=$kind '$3 == k { print $1, $2 }' edges.txt | tsort 2>&1 >/dev/null |
		awk -v E=edges.txt -v k=$kind '
			/input contains a loop/ { g++; next }
			{ sub(/^tsort: /, ""); in_g[g SUBSEP $0] = 1 }
			END {
				while ((getline l < E) > 0) {
					split(l, w, " ")
					if (w[3] != k)
						continue
					for (i = 1; i <= g; i++)
						if ((i SUBSEP w[1]) in in_g && (i SUBSEP w[2]) in in_g)
							break
					if (i > g)
						continue
					a = w[1] " -> " w[2]
					if (a in r)
						r[a] = r[a] ", " w[4]
					else
						r[a] = a ": " k " " w[4]
				}
				for (a in r)
					print r[a]
			}'
	done | sort
}

# The checker catches a cycle of includes (both spellings of a header of
# the folder) and one of calls (mgpu-probe's main.c and system.c were
# one); an internal header that includes the public one, a table naming
# the entries that call its helpers, files of two folders and the object
# of a source that is gone or older than its source are no cycles.
mkdir -p cyc/lib/ops cyc/lib/gpu cyc/lib/nn cyc/tools/p cyc/tools/q gone
mkdir -p obj/lib/nn obj/tools/p obj/tools/q
printf '#include "ops/b.h"\n' >cyc/lib/ops/a.c
printf '#include "a.h"\n' >cyc/lib/ops/b.c
printf '#include "c.h"\n#include "ops/b.h"\n#include "gpu/g.h"\n' >cyc/lib/ops/c.c
printf '#include "gpu/g.h"\n' >cyc/lib/gpu/g_int.h
printf '#include "gpu/g_int.h"\n#include "ops/c.h"\n' >cyc/lib/gpu/g.c
printf '#include "g_int.h"\n' >cyc/lib/gpu/g_nvml.c
printf 'int report(void);\nvoid out_open(void) {}\nint main(void) { return report(); }\n' \
	>cyc/tools/p/main.c
printf 'void out_open(void);\nint report(void) { out_open(); return 0; }\n' >cyc/tools/p/system.c
printf 'int report(void) { return 0; }\n' >cyc/tools/q/system.c
printf 'extern const int strat;\nint old(void);\nint helper(void) { return old(); }\n' \
	>cyc/lib/nn/sync.c
printf 'const int *table(void) { return &strat; }\n' >>cyc/lib/nn/sync.c
printf 'int helper(void);\nconst int strat = 2;\nint use(void) { return helper(); }\n' \
	>cyc/lib/nn/sync_x.c
printf 'int helper(void);\nint old(void) { return helper(); }\n' >gone/old.c
for f in tools/p/main tools/p/system tools/q/system lib/nn/sync lib/nn/sync_x; do
	cc -w -c -o obj/$f.o cyc/$f.c || fail "cannot compile the made-up $f.c"
done
cc -w -c -o obj/lib/nn/old.o gone/old.c || fail "cannot compile the made-up old.c"
# tools/q/system.o once called tools/q/main's out_open; both sources changed since
printf 'void out_open(void);\nint report(void) { out_open(); return 0; }\n' >stale.c
printf 'int report(void);\nvoid out_open(void) {}\nint main(void) { return report(); }\n' \
	>stale_main.c
cc -w -c -o obj/tools/q/system.o stale.c || fail "cannot compile the made-up stale.c"
cc -w -c -o obj/tools/q/main.o stale_main.c || fail "cannot compile the made-up stale_main.c"
touch -d '1 hour ago' obj/tools/q/system.o obj/tools/q/main.o
printf 'int main(void) { return 0; }\n' >cyc/tools/q/main.c
cycles cyc obj >cyc.txt
cat >want.txt <<'EOF'
lib/ops/a -> lib/ops/b: includes ops/b.h
lib/ops/b -> lib/ops/a: includes a.h
tools/p/main -> tools/p/system: calls report
tools/p/system -> tools/p/main: calls out_open
EOF
diff want.txt cyc.txt >/dev/null || fail "the cycle checker is wrong on a made-up tree: $(cat cyc.txt)"

OBJ=${BIN%/bin}/obj
[ -d "$OBJ/lib" ] || OBJ=
cycles "$SRC" $OBJ >cyc.txt
[ ! -s cyc.txt ] || fail "files inside a folder that depend on each other:
$(cat cyc.txt)"
[ -n "$OBJ" ] || { echo "no objects in ${BIN%/bin}/obj: calls between files not checked"; exit 77; }
