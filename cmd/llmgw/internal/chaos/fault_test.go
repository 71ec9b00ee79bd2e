package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
	testpoll "github.com/llmgw/llmgw/internal/testkit/poll"
)

// runFault injects one fault under the running load and restores the
// fleet, and returns its row (all but the load's counts, which Tally adds
// once every request has ended) and the window of requests that count
// for it: from just before the fault until the fleet, exact again, has
// served settle more.
func runFault(ctx context.Context, t *testing.T, f *fleet.Fleet, o fleet.Options, load *Load, flt fault) (Row, [2]time.Time) {
	t.Helper()
	row := Row{Fault: flt.name}
	before := fleetProcs(o)
	row.RouterRSS[0], row.PluginRSS[0] = memory(t, f)
	mig := migrations(ctx, t, f)
	from := time.Now()
	awaitRequests(t, load, settle)
	shard, err := flt.inject(f, load)
	if err != nil {
		t.Fatalf("%s: %v", flt.name, err)
	}
	restart := time.Now()
	if err := flt.restore(ctx, f, shard); err != nil {
		t.Fatalf("%s: restore: %v", flt.name, err)
	}
	if err := f.WaitExact(ctx); err != nil {
		row.Exact = -1
		t.Logf("%s: %v", flt.name, err)
	} else {
		row.Exact = time.Since(restart)
	}
	awaitRequests(t, load, settle)
	to := time.Now()
	for url, n := range migrations(ctx, t, f) {
		row.Migrated += n - mig[url]
	}
	row.RouterRSS[1], row.PluginRSS[1] = memory(t, f)
	after := fleetProcs(o)
	for kind, ps := range after {
		if len(ps) > len(before[kind]) {
			row.Left = append(row.Left, ps...)
		}
	}
	t.Logf("%s: exact again after %s", flt.name, row.Exact.Round(time.Millisecond))
	return row, [2]time.Time{from, to}
}

// awaitRequests waits until n more requests of the load have ended.
func awaitRequests(t *testing.T, load *Load, n int) {
	t.Helper()
	target := load.Count() + n
	testpoll.Until(t, fmt.Sprintf("%d more requests to end", n), func() bool { return load.Count() >= target })
}

// memory is the live routers' resident memory, summed, and the plugin's.
func memory(t *testing.T, f *fleet.Fleet) (routers, plugin int64) {
	t.Helper()
	for _, pid := range f.RouterPIDs() {
		n, err := RSS(pid)
		if err != nil {
			t.Fatal(err)
		}
		routers += n
	}
	plugin, err := RSS(f.DriverPID())
	if err != nil {
		t.Fatal(err)
	}
	return routers, plugin
}

// migrations reads every live router's completed migrations, by its
// admin URL.
func migrations(ctx context.Context, t *testing.T, f *fleet.Fleet) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, u := range f.RouterURLs() {
		admin := f.AdminURL(u)
		n, err := Migrations(ctx, testClient, admin)
		if err != nil {
			t.Fatal(err)
		}
		out[admin] = n
	}
	return out
}

// fleetProcs walks /proc for the fleet's processes: any whose command
// line names its bin dir or its work dir, or whose
// working directory lies in the work dir; a zombie counts only when this
// process is its parent (another's is its parent's to reap). They are
// keyed by kind: the binary's name, and "supervise" for the driver's
// supervisors.
func fleetProcs(o fleet.Options) map[string][]string {
	out := map[string][]string{}
	me := strconv.Itoa(os.Getpid())
	// Not the Consul binary's path: other fleets on the machine may run
	// the same one. This fleet's agent names the work dir (its data dir).
	marks := slices.DeleteFunc([]string{o.BinDir, o.WorkDir}, func(s string) bool { return s == "" })
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == me {
			continue
		}
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		raw, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
		if err != nil || len(raw) == 0 && cwd == "" {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		mine := o.WorkDir != "" && strings.HasPrefix(cwd, o.WorkDir)
		for _, m := range marks {
			mine = mine || strings.Contains(string(raw), m)
		}
		if !mine || fields[0] == "Z" && fields[1] != me {
			continue
		}
		kind := filepath.Base(argv[0])
		if len(argv) > 1 && argv[1] == "supervise" {
			kind += " supervise"
		}
		out[kind] = append(out[kind], fmt.Sprintf("pid %s (%s): %s", pid, fields[0], strings.Join(argv, " ")))
	}
	return out
}
