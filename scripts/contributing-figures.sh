#!/usr/bin/env bash
# contributing-figures.sh: write the figures CONTRIBUTING.md quotes from
# the build (the Go version in go.mod, the Consul version and the fuzzing
# budget in the Makefile) into its region between the markers, so that
# the text cannot drift from the build.
#
#   scripts/contributing-figures.sh [--check] [ROOT]
#
# ROOT defaults to the repository holding this script. --check rewrites
# nothing and exits 1 when the committed region differs from what the
# build gives (internal/tests/docs runs it); `make docs-figures` rewrites it.
set -euo pipefail

check=false
if [[ "${1:-}" == --check ]]; then
	check=true
	shift
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
doc=$root/CONTRIBUTING.md
begin='<!-- contributing figures: begin (scripts/contributing-figures.sh) -->'
end='<!-- contributing figures: end -->'

# one VAR FILE SED-EXPRESSION: the value the expression prints, or fail.
one() {
	local v
	v=$(sed -n "$3" "$2")
	if [[ -z "$v" ]]; then
		echo "contributing-figures: no $1 in $2" >&2
		exit 2
	fi
	printf '%s' "$v"
}
go_version=$(one "go directive" "$root/go.mod" 's/^go \([0-9][0-9.]*\)$/\1/p')
consul_version=$(one CONSUL_VERSION "$root/Makefile" 's/^CONSUL_VERSION := \(.*\)$/\1/p')
fuzztime=$(one FUZZTIME "$root/Makefile" 's/^FUZZTIME ?= \(.*\)$/\1/p')

region="$begin
| what | value | from |
|---|---|---|
| Go | $go_version | the \`go\` directive of \`go.mod\` |
| Consul agent the tests run (MPL-2.0) | $consul_version | \`CONSUL_VERSION\` in the \`Makefile\` |
| each fuzz target in \`make test\` and \`make fuzz\` | \`-fuzztime $fuzztime\` | \`FUZZTIME\` in the \`Makefile\` |
$end"

if [[ $(grep -cxF "$begin" "$doc") != 1 || $(grep -cxF "$end" "$doc") != 1 ]]; then
	echo "contributing-figures: $doc needs one '$begin' line and one '$end' line" >&2
	exit 2
fi
current=$(sed -n "\\|^$begin\$|,\\|^$end\$|p" "$doc")
if $check; then
	if [[ "$current" != "$region" ]]; then
		echo "contributing-figures: CONTRIBUTING.md's figures differ from the build; run make docs-figures" >&2
		diff <(printf '%s\n' "$current") <(printf '%s\n' "$region") >&2 || true
		exit 1
	fi
	exit 0
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
awk -v begin="$begin" -v end="$end" -v region="$region" '
	$0 == begin { print region; skip = 1; next }
	$0 == end { skip = 0; next }
	!skip { print }
' "$doc" >"$tmp"
cat "$tmp" >"$doc"
