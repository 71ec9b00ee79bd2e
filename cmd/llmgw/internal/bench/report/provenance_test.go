package report

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestCommitOf(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}
	tests := []struct {
		name     string
		linked   string
		settings []debug.BuildSetting
		want     string
	}{
		{"clean tree", "", []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "false"}}, "0123456"},
		{"uncommitted changes", "", []debug.BuildSetting{rev, {Key: "vcs.modified", Value: "true"}}, "0123456+dirty"},
		{"no VCS information", "", []debug.BuildSetting{{Key: "GOOS", Value: "linux"}}, "unknown"},
		// A worktree nested in another checkout: Go stamped the
		// enclosing checkout's commit; make linked the right one.
		{"linked by make", "89abcde+dirty", []debug.BuildSetting{rev}, "89abcde+dirty"},
		{"linked, no VCS information", "89abcde", nil, "89abcde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commitOf(tt.linked, tt.settings); got != tt.want {
				t.Errorf("commitOf = %q; want %q", got, tt.want)
			}
		})
	}
}

// TestProvenanceFill: a fresh run is stamped with the day it ran; a
// recorded one keeps what it recorded, so rendering it again later does
// not restamp it.
func TestProvenanceFill(t *testing.T) {
	now := time.Date(2026, 12, 4, 23, 30, 0, 0, time.UTC)
	var fresh Provenance
	fresh.fill(now)
	if fresh.Date != "2026-12-04" || fresh.Commit == "" || !strings.Contains(fresh.Machine, "CPUs") {
		t.Errorf("fresh run stamped %+v; want date 2026-12-04, a commit and the machine", fresh)
	}
	kept := Provenance{Date: "2026-12-02", Commit: "429fd26", Machine: "2 CPUs, shared"}
	got := kept
	got.fill(now)
	if got != kept {
		t.Errorf("recorded provenance changed to %+v; want %+v", got, kept)
	}
}

// TestSectionsOpenWithProvenance: both generated sections open with the
// line docs/BENCHMARKS.md requires before a table.
func TestSectionsOpenWithProvenance(t *testing.T) {
	line := regexp.MustCompile("^Command: `[^`]+` · Date: \\d{4}-\\d{2}-\\d{2} · Commit: [0-9a-f]{7}(\\+dirty)? · Conditions: .+\n")
	p := Provenance{Date: "2026-12-02", Commit: "429fd26", Machine: "2 CPUs, shared"}
	s := sampleSweep()
	s.Provenance = p
	r := sample()
	r.Provenance, r.HostLoad = p, 2.5
	tests := []struct {
		name, md, conditions string
	}{
		{"sweep", s.Markdown(nil), "Conditions: 2 CPUs, shared; host load average (1 min) 1.5, 1.5, 1.5, 1.5 as each rate ended\n"},
		{"report", r.Markdown(nil), "Conditions: 2 CPUs, shared; host load average (1 min) 2.5 as the run ended\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !line.MatchString(tt.md) || !strings.Contains(tt.md, tt.conditions) {
				t.Errorf("section does not open with the provenance line %q:\n%s", tt.conditions, tt.md)
			}
		})
	}
	r.HostLoad = 0
	if md := r.Markdown(nil); !strings.Contains(md, "shared; host load not recorded\n") {
		t.Errorf("a report without its load claims one:\n%s", md)
	}
}
