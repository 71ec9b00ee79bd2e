package driver_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// engineBlocks reads the engine's own view of its cache.
func engineBlocks(t *testing.T, url string) []simproc.Block {
	t.Helper()
	d, err := simproc.ReadDump(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	return d.Blocks
}

// truth is the engine's own view of its cache, as canonical block keys:
// what the driver's block state must equal.
func truth(t *testing.T, url string) (n int, sum uint64) {
	t.Helper()
	blocks := engineBlocks(t, url)
	byHash := map[uint64]int{}
	for i, b := range blocks {
		byHash[b.Hash] = i
	}
	keys := map[uint64]blockkey.Key{}
	var key func(h uint64) blockkey.Key
	key = func(h uint64) blockkey.Key {
		if k, ok := keys[h]; ok {
			return k
		}
		b := blocks[byHash[h]]
		parent := blockkey.Root("")
		if b.Parent != nil {
			parent = key(*b.Parent)
		}
		k := blockkey.Chain(parent, b.TokenIDs, nil)
		keys[h] = k
		return k
	}
	for _, b := range blocks {
		n++
		sum += uint64(key(b.Hash))
	}
	return n, sum
}

// kvState reads the driver's view of the replica from InspectTask.
func kvState(t *testing.T, attrs map[string]string) (n int, sum uint64) {
	t.Helper()
	n, _ = strconv.Atoi(attrs["kv_blocks"])
	sum, _ = strconv.ParseUint(attrs["kv_key_sum"], 16, 64)
	return n, sum
}

// waitInSync waits until the driver's block state equals the engine's.
// A batch the engine publishes before its PUB socket has finished joining
// the driver's SUB is dropped by ZeroMQ (the slow-joiner effect); the
// listener repairs it by replay when the next batch shows the gap. So while
// out of sync, a short completion every two seconds makes the engine
// publish again, as live traffic would.
func waitInSync(t *testing.T, get func() map[string]string, url string) {
	t.Helper()
	var last string
	nudge := time.Now().Add(2 * time.Second)
	i := 0
	ok := poll.Within(poll.Timeout, func() bool {
		attrs := get()
		gn, gs := truth(t, url)
		dn, ds := kvState(t, attrs)
		if gn > 0 && gn == dn && gs == ds {
			return true
		}
		last = "engine " + strconv.Itoa(gn) + " blocks, driver " + strconv.Itoa(dn) + "; batches=" + attrs["kv_batches"] +
			" replayed=" + attrs["kv_replayed"] + " lost=" + attrs["kv_lost"]
		if time.Now().After(nudge) {
			i++
			complete(t, url, strings.Repeat("nudge "+strconv.Itoa(i)+" ", 12))
			nudge = time.Now().Add(2 * time.Second)
		}
		return false
	})
	if !ok {
		t.Fatalf("driver's block state never matched the engine's: %s", last)
	}
}

// TestRecoverAfterPluginCrash: kill -9 the plugin while a shard runs; a new
// plugin process recovers it from driver_state alone, KV events resume on
// the same socket directory (over ipc) or port (over TCP) with no block
// lost, its recovery events reach Nomad once Nomad has a handler for them,
// and WaitTask reports the true exit.
func TestRecoverAfterPluginCrash(t *testing.T) {
	for _, transport := range []string{"ipc", "tcp"} {
		t.Run(transport, func(t *testing.T) { recoverAfterPluginCrash(t, map[string]any{"kv_transport": transport}) })
	}
}

func recoverAfterPluginCrash(t *testing.T, plugin map[string]any) {
	h1 := launchWith(t, simBin, plugin)
	ev := watchEvents(t, h1)
	task := newTask(t, h1, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	started := start(t, h1, task.Config)
	ev.next(t, "model ready")
	url := engineURL(task)
	pid := enginePid(t, h1, id)
	port1 := kvWhereFor(t, h1, task, plugin["kv_transport"] == "ipc")
	complete(t, url, strings.Repeat("alpha beta gamma delta ", 12))
	waitInSync(t, func() map[string]string { return inspect(t, h1, id).GetDriver().GetAttributes() }, url)

	if err := h1.Crash(); err != nil {
		t.Fatal(err)
	}
	if pluginhost.GroupGone(pid) {
		t.Fatal("the shard died with the plugin")
	}
	// Blocks stored while no plugin listens: only replay can deliver them.
	complete(t, url, strings.Repeat("epsilon zeta eta theta ", 12))

	h2 := launchWith(t, simBin, plugin)
	ev2 := watchEvents(t, h2)
	// After an agent restart Nomad has lost the raw task config.
	handle := proto.Clone(started).(*drivers.TaskHandle)
	handle.Config.MsgpackDriverConfig = nil
	if _, err := h2.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: handle}); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: handle}); err != nil {
		t.Errorf("second recover of a known task: %v", err)
	}
	// Nomad has no handler for the task's events until its first call for
	// the task after the recovery: nothing may reach it before. A task
	// started now marks the point: the stream is in order.
	for _, e := range ev2.until(t, marker(t, h2)) {
		if e.GetTaskId() == id {
			t.Errorf("event %q sent before Nomad called for the task", e.GetMessage())
		}
	}
	// The task runner's first call, which it keeps open.
	waited := h2.WaitAsync(ctx(t), id)
	if e := ev2.next(t, "KV events resumed"); !strings.HasSuffix(e.GetMessage(), port1) {
		t.Errorf("event %q; want the same socket directory or port %s", e.GetMessage(), port1)
	}
	ev2.next(t, "recovered after plugin restart")
	if d := ev2.e.Dropped(); len(d) > 0 {
		t.Errorf("events Nomad would drop for want of a handler: %v", d)
	}
	attrs := inspect(t, h2, id).GetDriver().GetAttributes()
	if kvWhere(attrs) != port1 || attrs["engine_pid"] != strconv.Itoa(pid) {
		t.Errorf("recovered attrs %v; want socket directory or port %s and pid %d", attrs, port1, pid)
	}
	// New traffic makes the engine publish; the listener sees the sequence
	// gap and replays everything it missed.
	complete(t, url, strings.Repeat("iota kappa lambda mu ", 12))
	waitInSync(t, func() map[string]string { return inspect(t, h2, id).GetDriver().GetAttributes() }, url)
	after := inspect(t, h2, id).GetDriver().GetAttributes()
	if after["kv_lost"] != "0" || after["kv_replayed"] == "0" {
		t.Errorf("kv_lost = %s, kv_replayed = %s; want the missed batches replayed, none lost", after["kv_lost"], after["kv_replayed"])
	}
	t.Logf("after recovery: %s blocks, %s batches, %s replayed", after["kv_blocks"], after["kv_batches"], after["kv_replayed"])

	// The engine dies on its own; the recovered plugin still learns how.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w := <-waited
	if w.Err != nil {
		t.Fatal(w.Err)
	}
	if r := w.Resp; r.GetResult().GetSignal() != int32(syscall.SIGKILL) || r.GetResult().GetExitCode() != 128+int32(syscall.SIGKILL) {
		t.Errorf("wait after recovery: %v; want killed by SIGKILL", w.Resp)
	}
	if _, err := h2.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// kvWhereFor is kvWhere of task, checked: its socket directory over ipc,
// a port over TCP.
func kvWhereFor(t *testing.T, h *pluginhost.Host, task *pluginhost.Task, ipc bool) string {
	t.Helper()
	where := kvWhere(inspect(t, h, task.Config.GetId()).GetDriver().GetAttributes())
	if dir := filepath.Join(task.Config.GetAllocDir(), task.Config.GetName(), "llmgw-kv"); where == "" || ipc != (where == dir) {
		t.Fatalf("kv socket directory or port %q; want %s over ipc, a port over tcp", where, dir)
	}
	return where
}

// TestRecoverRejectsBadState: garbage driver_state fails recovery with a
// clear error, and the plugin lives on.
func TestRecoverRejectsBadState(t *testing.T) {
	h := launch(t, simBin)
	tests := []struct {
		name   string
		handle *drivers.TaskHandle
		code   codes.Code
	}{
		{"no id", &drivers.TaskHandle{}, codes.InvalidArgument},
		{"not json", &drivers.TaskHandle{Version: 1, Config: &drivers.TaskConfig{Id: "a/b/c"}, DriverState: []byte("\x00\xff")}, codes.InvalidArgument},
		{"old version", &drivers.TaskHandle{Version: 0, Config: &drivers.TaskConfig{Id: "a/b/c"}, DriverState: []byte(`{"version":0}`)}, codes.FailedPrecondition},
		{"dead supervisor", &drivers.TaskHandle{Version: 1, Config: &drivers.TaskConfig{Id: "a/b/c"},
			DriverState: []byte(`{"version":1,"supervisor":{"supervisor_pid":999999,"supervisor_start":1,"engine_pid":999999,"exit_file":"/nonexistent"}}`)},
			codes.FailedPrecondition},
	}
	for _, tt := range tests {
		_, err := h.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: tt.handle})
		if status.Code(err) != tt.code {
			t.Errorf("%s: got %v; want %v", tt.name, err, tt.code)
		}
	}
	if _, err := h.Driver.Capabilities(ctx(t), &drivers.CapabilitiesRequest{}); err != nil {
		t.Errorf("plugin unwell after bad recoveries: %v", err)
	}
}

// TestListenerBindFailure: over TCP with Nomad's plugin port range taken,
// the listener cannot bind; the shard starts anyway, with a Driver event.
func TestListenerBindFailure(t *testing.T) {
	h := launch(t, simBin)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	p := uint32(busy.Addr().(*net.TCPAddr).Port)
	if err := h.SetConfig(ctx(t), map[string]any{"engine": simBin, "kv_transport": "tcp"}, nomadRange(p, p)); err != nil {
		t.Fatal(err)
	}
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	if _, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: task.Config}); err != nil {
		t.Fatalf("start failed for an optimisation: %v", err)
	}
	if e := ev.next(t, "KV events off"); !strings.Contains(e.GetMessage(), "listener failed") {
		t.Errorf("event %q; want the listener failure", e.GetMessage())
	}
	ev.next(t, "model ready")
	id := task.Config.GetId()
	if a := inspect(t, h, id).GetDriver().GetAttributes(); a["kv_events"] != "false" {
		t.Errorf("attrs %v; want no kv events", a)
	}
	cmdline := engineCmdline(t, h, id)
	if strings.Contains(cmdline, "--kv-events-config") {
		t.Errorf("engine got a kv events config without a listener: %q", cmdline)
	}
	stop(t, h, id)
}

// TestNonLeaderGetsNoEvents: rank 1 of a two-node replica runs headless
// and publishes nothing, even with kv_events set.
func TestNonLeaderGetsNoEvents(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true,
		"shard": []map[string]any{{"rank": 1, "count": 2, "leader_address": "127.0.0.1:29500"}},
		"args":  []string{"--sim-latency=false", "--port", strconv.Itoa(netport.FreeTCP(t))}})
	start(t, h, task.Config)
	if e := ev.next(t, "KV events off"); !strings.Contains(e.GetMessage(), "rank 1 is not the leader") {
		t.Errorf("event %q", e.GetMessage())
	}
	id := task.Config.GetId()
	cmdline := engineCmdline(t, h, id)
	if strings.Contains(cmdline, "--kv-events-config") || !strings.Contains(cmdline, "--headless") {
		t.Errorf("rank 1 command line %q; want --headless and no kv events config", cmdline)
	}
	stop(t, h, id)
}

func nomadRange(lo, hi uint32) *base.NomadConfig {
	return &base.NomadConfig{Driver: &base.NomadDriverConfig{ClientMinPort: lo, ClientMaxPort: hi}}
}

func engineCmdline(t *testing.T, h *pluginhost.Host, id string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(enginePid(t, h, id)) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func stop(t *testing.T, h *pluginhost.Host, id string) {
	t.Helper()
	if _, err := h.Driver.StopTask(ctx(t), &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestRestartReusesListener: a shard started again for the same replica
// while its listener is open reuses the listener and its socket directory
// (docs/ARCHITECTURE.md, behaviour 2); destroying the old task does not take it away.
func TestRestartReusesListener(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	first := task.Config.GetId()
	start(t, h, task.Config)
	ev.next(t, "model ready")
	port := kvWhere(inspect(t, h, first).GetDriver().GetAttributes())
	if port == "" {
		t.Fatal("no kv socket directory or port")
	}
	if err := syscall.Kill(enginePid(t, h, first), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: first}); err != nil {
		t.Fatal(err)
	}

	again := proto.Clone(task.Config).(*drivers.TaskConfig)
	again.Id = again.GetAllocId() + "/" + again.GetName() + "/restart1"
	start(t, h, again)
	if e := ev.next(t, "restart seen"); !strings.HasSuffix(e.GetMessage(), port) {
		t.Errorf("event %q; want the restart to keep port %s", e.GetMessage(), port)
	}
	if e := ev.next(t, "KV events on"); !strings.HasSuffix(e.GetMessage(), port) {
		t.Errorf("event %q; want the replica's port %s again", e.GetMessage(), port)
	}
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: first, Force: true}); err != nil {
		t.Fatal(err)
	}
	attrs := inspect(t, h, again.GetId()).GetDriver().GetAttributes()
	if kvWhere(attrs) != port || attrs["kv_listening"] != "true" {
		t.Fatalf("after destroying the old task: %v", attrs)
	}
	ev.next(t, "model ready")
	complete(t, engineURL(task), strings.Repeat("nu xi omicron pi rho ", 12))
	waitInSync(t, func() map[string]string { return inspect(t, h, again.GetId()).GetDriver().GetAttributes() }, engineURL(task))
	stop(t, h, again.GetId())
}

// TestSupervisorLost: if the supervisor itself is killed, the task ends
// with an error instead of success, the engine does not outlive it, and
// the Driver event says the exit went unrecorded rather than "code 0".
func TestSupervisorLost(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	started := start(t, h, task.Config)
	var st struct {
		Supervisor struct {
			Pid int `json:"supervisor_pid"`
		} `json:"supervisor"`
	}
	if err := json.Unmarshal(started.GetDriverState(), &st); err != nil || st.Supervisor.Pid == 0 {
		t.Fatalf("driver state: %v", err)
	}
	pid := enginePid(t, h, id)
	if err := syscall.Kill(st.Supervisor.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r, err := h.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetResult().GetExitCode() == 0 || !strings.Contains(r.GetErr(), "without recording") {
		t.Errorf("wait %v; want a failure naming the lost supervisor", r)
	}
	poll.Until(t, "the orphaned engine's group to be killed", func() bool { return pluginhost.GroupGone(pid) })
	got := exitEvents(ev.until(t, marker(t, h)), id)
	if len(got) != 1 || !strings.Contains(got[0].GetMessage(), "without recording") || strings.Contains(got[0].GetMessage(), "code 0") {
		t.Errorf("exit events of the task whose supervisor was killed: %v; want one naming the lost supervisor", got)
	}
}

// TestDataParallelEvents: with data_parallel_size 2 each rank publishes on
// its own socket (over ipc, the rank's "_dp1" path; over TCP, the
// listener's port plus the rank), and the driver's state covers both
// ranks.
func TestDataParallelEvents(t *testing.T) {
	for _, transport := range []string{"ipc", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			h := launchWith(t, simBin, map[string]any{"kv_transport": transport})
			ev := watchEvents(t, h)
			task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "data_parallel_size": 2})
			id := task.Config.GetId()
			start(t, h, task.Config)
			defer stop(t, h, id)
			ev.next(t, "model ready")
			url := engineURL(task)
			spreadOverRanks(t, url)
			waitInSync(t, func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }, url)
			assertBothRanks(t, url)
		})
	}
}

// spreadOverRanks sends concurrent requests: with the latency model on
// they overlap and the engine's least-loaded rank choice spreads them over
// both ranks.
func spreadOverRanks(t *testing.T, url string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"sim","max_tokens":8,"prompt":"` + strings.Repeat("rank spread "+strconv.Itoa(i)+" ", 10) + `"}`
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
}

// assertBothRanks checks that the engine holds blocks on both ranks, so a
// driver in sync with it received both ranks' events.
func assertBothRanks(t *testing.T, url string) {
	t.Helper()
	ranks := map[int]bool{}
	for _, b := range engineBlocks(t, url) {
		ranks[b.DPRank] = true
	}
	if len(ranks) != 2 {
		t.Errorf("blocks on ranks %v; want both ranks to hold some", ranks)
	}
}
