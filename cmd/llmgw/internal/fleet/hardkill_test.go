package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
	testpoll "github.com/llmgw/llmgw/internal/testkit/poll"
)

// ownerEnv, when set (to the fleet's bin dir), makes the test binary a
// fleet owner: it starts a fleet in the work dir named by ownerWorkEnv,
// prints the pids it knows as one JSON line, and waits for stdin to close.
const (
	ownerEnv     = "LLMGW_FLEET_TEST_OWNER"
	ownerWorkEnv = "LLMGW_FLEET_TEST_WORKDIR"
	markerEnv    = "LLMGW_FLEET_TEST_MARKER"
)

// ownerStartBudget bounds the owner's fleet Start, whose own steps wait up
// to a minute each.
const ownerStartBudget = 5 * time.Minute

// ownerPids is what the owner prints.
type ownerPids struct {
	Consul  int   `json:"consul"`
	Plugin  int   `json:"plugin"`
	Routers []int `json:"routers"`
	Engines []int `json:"engines"`
}

func ownerMain() int {
	f, err := Start(context.Background(), Options{BinDir: os.Getenv(ownerEnv), WorkDir: os.Getenv(ownerWorkEnv),
		Shards: 2, Routers: 2, SimArgs: []string{"--sim-latency=false"}})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer f.Close()
	pids := ownerPids{Consul: f.consul.p.pid(), Plugin: f.driver.Pid()}
	for _, r := range f.liveRouters() {
		pids.Routers = append(pids.Routers, r.p.pid())
	}
	for _, s := range f.runningShards() {
		pids.Engines = append(pids.Engines, s.enginePid)
	}
	b, _ := json.Marshal(pids)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestHardKill: SIGKILL the process that owns a fleet; every process it
// started, directly or not, dies too: Consul, the routers, the plugin, the
// shards' supervisors (in sessions of their own) and their engines.
func TestHardKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a fleet in a child process")
	}
	work := t.TempDir()
	marker := randomHex(8)
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), ownerEnv+"="+bins.Dir(t), ownerWorkEnv+"="+work, markerEnv+"="+marker,
		"TMPDIR="+t.TempDir()) // go-plugin's socket, which a killed plugin leaves
	owner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "owner.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	owner.Stderr = stderr
	stdin, err := owner.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []osProc
	t.Cleanup(func() {
		stdin.Close()
		_ = owner.Process.Kill()
		_ = owner.Wait()
		// A failed test must not leave its fleet running.
		for _, p := range survivors(seen, marker) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})

	// The owner's first line, read aside so that a hung Start fails the
	// test instead of blocking it; the read ends when the owner does.
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(ownerStartBudget):
	}
	var pids ownerPids
	if err := json.Unmarshal([]byte(line), &pids); err != nil {
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the owner printed %q, not its pids:\n%s", line, b)
	}
	seen = descendants(owner.Process.Pid)
	t.Logf("owner %d started %d processes:\n%s", owner.Process.Pid, len(seen), describe(seen))
	checkTree(t, seen, pids)

	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	killed := time.Now()
	if !testpoll.Within(testpoll.Timeout, func() bool { return len(survivors(seen, marker)) == 0 }) {
		t.Fatalf("%v after the owner's SIGKILL, these outlive it:\n%s", testpoll.Timeout, describe(survivors(seen, marker)))
	}
	t.Logf("all %d gone %v after the owner's SIGKILL", len(seen), time.Since(killed).Round(time.Millisecond))
	fleettest.CheckNone(t, work)
}

// checkTree fails the test unless the tree below the owner holds every pid
// it printed, and a supervisor (a session leader, child of the plugin) for
// each engine: what the test then watches must be the whole fleet.
func checkTree(t *testing.T, seen []osProc, pids ownerPids) {
	t.Helper()
	byPid := map[int]osProc{}
	for _, p := range seen {
		byPid[p.pid] = p
	}
	want := append([]int{pids.Consul, pids.Plugin}, append(pids.Routers, pids.Engines...)...)
	if len(pids.Routers) != 2 || len(pids.Engines) != 2 {
		t.Fatalf("owner reports %+v; want 2 routers and 2 engines", pids)
	}
	for _, pid := range want {
		if _, ok := byPid[pid]; !ok {
			t.Fatalf("pid %d, reported by the owner, is not below it", pid)
		}
	}
	for _, e := range pids.Engines {
		sup, ok := byPid[byPid[e].ppid]
		if !ok || sup.ppid != pids.Plugin || sup.sid != sup.pid || !strings.Contains(sup.cmdline, " supervise ") {
			t.Fatalf("engine %d: parent %+v is not a supervisor of plugin %d in a session of its own", e, sup, pids.Plugin)
		}
		if !strings.Contains(sup.cmdline, " -owner ") {
			t.Errorf("supervisor %d has no owner: %s", sup.pid, sup.cmdline)
		}
	}
}

// osProc is one process as /proc shows it.
type osProc struct {
	pid, ppid, pgid, sid int
	start                string // start time in clock ticks: with pid, the process's identity
	zombie               bool
	cmdline              string
}

// readProc reads /proc/<pid>; false when it has gone.
func readProc(pid int) (osProc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return osProc{}, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 20 {
		return osProc{}, false
	}
	p := osProc{pid: pid, start: f[19], zombie: f[0] == "Z"}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	c, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	p.cmdline = strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
	return p, true
}

// all lists every process but this one.
func all() []osProc {
	entries, _ := os.ReadDir("/proc")
	var out []osProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// descendants lists every live process below root, by parent links.
func descendants(root int) []osProc {
	procs := all()
	below := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if below[p.ppid] && !below[p.pid] {
				below[p.pid], grew = true, true
			}
		}
	}
	return slices.DeleteFunc(procs, func(p osProc) bool { return p.pid == root || !below[p.pid] || p.zombie })
}

// survivors lists live processes that belong to the fleet: one of seen (same
// pid and start time), a member of one of their process groups or sessions
// (a worker an engine forked), or one that inherited the marker.
func survivors(seen []osProc, marker string) []osProc {
	me, _ := readProc(os.Getpid())
	ids, groups := map[string]bool{}, map[int]bool{}
	for _, p := range seen {
		ids[strconv.Itoa(p.pid)+"/"+p.start] = true
		groups[p.pgid], groups[p.sid] = true, true
	}
	delete(groups, me.pgid) // the test's own group and session
	delete(groups, me.sid)
	var out []osProc
	for _, p := range all() {
		if p.zombie {
			continue // exited; only waits for init to reap it
		}
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if ids[strconv.Itoa(p.pid)+"/"+p.start] || groups[p.pgid] || groups[p.sid] ||
			strings.Contains(string(env), markerEnv+"="+marker) {
			out = append(out, p)
		}
	}
	return out
}

func describe(ps []osProc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  pid %d (parent %d, group %d, session %d): %s\n", p.pid, p.ppid, p.pgid, p.sid, p.cmdline)
	}
	return b.String()
}
