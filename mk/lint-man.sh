#!/bin/sh
# lint-man.sh [PAGE...] - check the man pages (default man/*.1 man/*.5
# man/*.7): mandoc -T lint at warning level, then the rendered text for
# the mistakes mandoc accepts without a word. A macro that takes the words
# after it (Fl) and is not ended before the prose goes on turns that prose
# into flags: ".Fl \-model ) , evaluates it on" renders as "--model),
# -evaluates -it -on". Two dash-words in a row that are no options are
# such a run: one line per hit, "PAGE: rendered line N: TEXT", exit 1.
set -u
cd "$(dirname "$0")/.." || exit 2
[ $# -gt 0 ] || set -- man/*.1 man/*.5 man/*.7
status=0
bs=$(printf '\b') # mandoc's overstrike (bold X is X BS X) comes out with sed, as col -b would
mandoc -T lint -W warning "$@" || status=1
for page in "$@"; do
	mandoc -T ascii "$page" | sed "s/.$bs//g" | awk -v page="$page" '
		{
			n = split($0, w, /[ \t]+/)
			for (i = 1; i < n; i++)
				if (w[i] ~ /^\(?-[a-z][a-z]+[,.;:)]*$/ && w[i + 1] ~ /^-[a-z][a-z]+[,.;:)]*$/) {
					printf "%s: rendered line %d: stray flags \"%s %s\": a macro (Fl?) took the prose after it: %s\n", page, NR, w[i], w[i + 1], $0
					bad = 1
					break
				}
		}
		END {
			if (NR == 0) { # nothing rendered: a check that saw nothing passes nothing
				printf "%s: mandoc rendered nothing\n", page
				bad = 1
			}
			exit bad
		}' || status=1
done
exit $status
