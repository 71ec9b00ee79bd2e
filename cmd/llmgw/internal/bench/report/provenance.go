package report

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Provenance says when a run was made, from which code and on what
// machine. docs/BENCHMARKS.md names them beside every table's command
// (internal/tests/docs checks it), because a figure without its date,
// commit and load cannot be compared with the next run's.
type Provenance struct {
	// Date is the run's day, UTC, as YYYY-MM-DD.
	Date string `json:"date,omitempty"`
	// Commit is the short hash of the code measured (the commit make
	// build linked in, else the binary's vcs.revision), with "+dirty"
	// when its tree had uncommitted changes.
	Commit string `json:"commit,omitempty"`
	// Machine is the host in words: CPUs and platform.
	Machine string `json:"machine,omitempty"`
}

// fill sets what a fresh run does not record yet: today's date, the
// binary's commit and this host. It runs when a report is first encoded
// or rendered, right after the run, so the values are the run's; a file
// that already has them keeps them, so rendering it again later does not
// restamp it.
func (p *Provenance) fill(now time.Time) {
	if p.Date == "" {
		p.Date = now.UTC().Format(time.DateOnly)
	}
	if p.Commit == "" {
		p.Commit = buildCommit()
	}
	if p.Machine == "" {
		p.Machine = fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	}
}

// linkedCommit is the commit `make build` links in (-X, from git
// rev-parse and git status: a short hash, "+dirty" after it when the tree
// had changes). Go's own stamp cannot be trusted for it: Go takes only a
// .git directory for a repository's root, so in a linked git worktree,
// whose .git is a file, it stamps nothing, or the commit of a checkout
// that encloses the worktree (golang/go#58218).
var linkedCommit string

// buildCommit is the commit the running binary was built from, or
// "unknown" for a binary built with neither (go run, go test).
func buildCommit() string {
	var settings []debug.BuildSetting
	if info, ok := debug.ReadBuildInfo(); ok {
		settings = info.Settings
	}
	return commitOf(linkedCommit, settings)
}

// commitOf is linked when set, else the shortened vcs.revision of the
// build settings, marked "+dirty" by vcs.modified.
func commitOf(linked string, settings []debug.BuildSetting) string {
	if linked != "" {
		return linked
	}
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	rev = rev[:min(len(rev), 7)]
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// provenanceLine is the first line of a generated section: the command,
// date, commit and conditions, in the form docs/BENCHMARKS.md uses before
// every table.
func (p Provenance) line(command, conditions string) string {
	return fmt.Sprintf("Command: `%s` · Date: %s · Commit: %s · Conditions: %s\n", command, p.Date, p.Commit, conditions)
}

// loadConditions describes the machine and its load average at the end
// of each run (0: not recorded).
func loadConditions(machine string, loads []float64, each string) string {
	recorded := make([]string, len(loads))
	known := false
	for i, l := range loads {
		recorded[i] = fmt.Sprintf("%.1f", l)
		known = known || l > 0
	}
	if !known {
		return machine + "; host load not recorded"
	}
	return fmt.Sprintf("%s; host load average (1 min) %s as %s ended", machine, strings.Join(recorded, ", "), each)
}
