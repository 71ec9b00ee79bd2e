package chaos

import (
	"fmt"
	"strings"
	"time"
)

// Targets of a fault run: a miss is written in the table, and the hard
// ones (HardMisses) fail the suite.
const (
	// ExactTarget bounds the time from a restart until every router
	// routes every replica exact again.
	ExactTarget = 5 * time.Second
	// RSSGrowthTarget bounds a router's or the plugin's memory after a
	// fault against before, as a fraction of before.
	RSSGrowthTarget = 0.10
)

// Row is one fault's line of the table.
type Row struct {
	Fault string
	// Plain requests sent in the fault's window, and those failed after
	// the client's retries.
	Plain, PlainFailed int
	// Streams sent in the window, by how they ended. Cut streams have no
	// event to end them: only a router's own death should cut one.
	Streams, StreamsOK, ErrorEvents, Cut, Hung, StreamsFailed int
	// Migrated is how many streams the routers moved to another replica
	// mid-way and completed (their metrics, over the window).
	Migrated int
	// Exact is the time from the start of the restart (or the resume)
	// until every router routed every replica exact again, the
	// restarted process's own start included; negative when it did not
	// within the fleet's wait.
	Exact time.Duration
	// Left are the fleet's processes after the fault that were not there
	// before it (a restarted process is new, and its predecessor gone).
	Left []string
	// RouterRSS and PluginRSS are the routers' (summed) and the plugin's
	// resident memory before and after the fault.
	RouterRSS, PluginRSS [2]int64
	// Notes are failures worth reading: one line per distinct reason.
	Notes []string
}

// Tally counts into r the results of requests sent in [from, to).
func (r *Row) Tally(results []Result, from, to time.Time) {
	seen := map[string]bool{}
	for _, res := range results {
		if res.Start.Before(from) || !res.Start.Before(to) {
			continue
		}
		if res.Outcome != OK && !seen[res.Err] && len(r.Notes) < 5 {
			seen[res.Err] = true
			r.Notes = append(r.Notes, fmt.Sprintf("%s (stream %v, %d attempts): %s", res.Outcome, res.Stream, res.Attempts, res.Err))
		}
		if !res.Stream {
			r.Plain++
			if res.Outcome != OK {
				r.PlainFailed++
			}
			continue
		}
		r.Streams++
		switch res.Outcome {
		case OK:
			r.StreamsOK++
		case ErrorEvent:
			r.ErrorEvents++
		case Cut:
			r.Cut++
		case Hung:
			r.Hung++
		case Failed:
			r.StreamsFailed++
		}
	}
}

// HardMisses are the targets whose miss fails the suite: a plain request
// failed, a stream hung, a process left behind.
func (r Row) HardMisses() []string {
	var out []string
	if r.PlainFailed > 0 {
		out = append(out, fmt.Sprintf("%d plain requests failed", r.PlainFailed))
	}
	if r.Hung > 0 {
		out = append(out, fmt.Sprintf("%d streams hung", r.Hung))
	}
	if len(r.Left) > 0 {
		out = append(out, fmt.Sprintf("%d processes left behind", len(r.Left)))
	}
	return out
}

// Misses are all the targets r misses, hard ones first.
func (r Row) Misses() []string {
	out := r.HardMisses()
	if r.Exact < 0 || r.Exact > ExactTarget {
		out = append(out, "exact routing not back within "+ExactTarget.String())
	}
	if grew(r.RouterRSS) {
		out = append(out, "router memory grew over 10 %")
	}
	if grew(r.PluginRSS) {
		out = append(out, "plugin memory grew over 10 %")
	}
	return out
}

func grew(rss [2]int64) bool {
	return rss[0] > 0 && float64(rss[1]) > float64(rss[0])*(1+RSSGrowthTarget)
}

// Markdown renders rows as the fault suite's table: one line per fault,
// and a last column naming every target it missed ("-" for none).
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| fault | plain sent | plain failed | streams sent | completed | migrated | error event | cut | failed to start | hung | exact again | left behind | router RSS | plugin RSS | targets missed |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		exact := "never"
		if r.Exact >= 0 {
			exact = fmt.Sprintf("%.2f s", r.Exact.Seconds())
		}
		misses := "-"
		if m := r.Misses(); len(m) > 0 {
			misses = strings.Join(m, "; ")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s | %d | %s | %s | %s |\n",
			r.Fault, r.Plain, r.PlainFailed, r.Streams, r.StreamsOK, r.Migrated, r.ErrorEvents, r.Cut, r.StreamsFailed,
			r.Hung, exact, len(r.Left), mib(r.RouterRSS), mib(r.PluginRSS), misses)
	}
	return b.String()
}

// mib renders memory before and after, in MiB, with the change.
func mib(rss [2]int64) string {
	if rss[0] == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f → %.0f MiB (%+.0f %%)", float64(rss[0])/(1<<20), float64(rss[1])/(1<<20),
		100*(float64(rss[1])/float64(rss[0])-1))
}
