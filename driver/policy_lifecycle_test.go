package driver_test

import (
	"bufio"
	"bytes"
	"os"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestEngineRunsAsDefaultUser: with the plugin config's defaults, a plugin
// running as root starts the engine as nobody, not as itself.
func TestEngineRunsAsDefaultUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the plugin switches users only when it runs as root; this test does not")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody on this machine: %v", err)
	}
	h := launch(t, simBin)
	task := newTask(t, h, map[string]any{"model": "sim"})
	start(t, h, task.Config)
	uid := procUID(t, enginePid(t, h, task.Config.GetId()))
	if uid != nobody.Uid {
		t.Errorf("engine runs as uid %s; want nobody's, %s", uid, nobody.Uid)
	}
}

// procUID is the real uid of a process, from /proc/PID/status.
func procUID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	return procField(b, "Uid:")
}

// procField is the first value of a /proc status line.
func procField(status []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == key {
			return f[1]
		}
	}
	return ""
}

// TestPolicyRefusals: with the plugin config's defaults, StartTask refuses
// a denied user, env keys and flags that change the code the engine runs,
// with InvalidArgument and a message naming them, and starts nothing.
func TestPolicyRefusals(t *testing.T) {
	h := launch(t, simBin)
	tests := []struct {
		name    string
		user    string
		env     map[string]string // the task's env, as Nomad passes it
		cfg     map[string]any
		wantErr string
	}{
		{"root", "root", nil, nil, `user "root" (uid 0) is denied`},
		{"uid 0", "0", nil, nil, `user "0" (uid 0) is denied`},
		{"LD_PRELOAD in config env", "", nil, map[string]any{"env": map[string]string{"LD_PRELOAD": "/tmp/x.so"}},
			"env: LD_PRELOAD is refused"},
		{"PYTHONPATH in task env", "", map[string]string{"PYTHONPATH": "/alloc/data"}, nil, "task env: PYTHONPATH is refused"},
		{"VLLM_PLUGINS in task env", "", map[string]string{"VLLM_PLUGINS": "evil"}, nil, "task env: VLLM_PLUGINS is refused"},
		{"trust remote code", "", nil, map[string]any{"args": []string{"--trust-remote-code"}}, "args[0]: --trust-remote-code is refused"},
		{"trust remote code spelt", "", nil, map[string]any{"args": []string{"--trust_remote_code=True"}},
			"--trust-remote-code (as --trust_remote_code=True)"},
		{"config file", "", nil, map[string]any{"args": []string{"--config", "local/x.yaml"}}, "args[0]: --config is refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := map[string]any{"model": "sim"}
			for k, v := range tt.cfg {
				cfg[k] = v
			}
			task := newTask(t, h, cfg)
			task.Config.User = tt.user
			for k, v := range tt.env {
				task.Config.Env[k] = v
			}
			_, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: task.Config})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v; want InvalidArgument naming %q", err, tt.wantErr)
			}
			if _, err := h.Driver.InspectTask(ctx(t), &drivers.InspectTaskRequest{TaskId: task.Config.GetId()}); err == nil {
				t.Error("the refused task is known to the plugin")
			}
		})
	}
}

// TestOversizedFramesDropped floods a running shard's KV-event socket with
// frames over the intake's cap, each from a new connection as a local
// attacker would send them: every one is dropped and counted
// (kv_disconnects), the plugin's resident memory stays within
// rssGrowthBound of where it was, and the engine's own events still
// arrive. Over loopback TCP any local process can connect, which is what
// this test does; it shows the cap, not an access control.
func TestOversizedFramesDropped(t *testing.T) {
	const floods = 40               // 40 × 9 MiB offered: 360 MiB
	const rssGrowthBound = 64 << 20 // bytes
	// Over ipc no other process can connect to send anything; the cap
	// shows over TCP, where any can.
	h := launchWith(t, simBin, map[string]any{"kv_transport": "tcp"})
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	attrs := func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }
	port := attrs()["kv_port"]
	if port == "" {
		t.Fatalf("no kv_port: %v", attrs())
	}
	rssBefore := rss(t, h.Pid())
	frame := make([]byte, intake.MaxMessageBytes+1<<20)
	for i := range floods {
		sendOversized(t, "tcp://127.0.0.1:"+port, frame)
		want := strconv.Itoa(i + 1)
		poll.Until(t, "disconnect "+want+" counted", func() bool { return attrs()["kv_disconnects"] == want })
	}
	grew := rss(t, h.Pid()) - rssBefore
	t.Logf("plugin RSS %d KiB before, grew %d KiB over %d oversized frames", rssBefore>>10, grew>>10, floods)
	if grew > rssGrowthBound {
		t.Errorf("plugin RSS grew %d bytes over %d oversized frames; bound %d", grew, floods, rssGrowthBound)
	}
	complete(t, engineURL(task), strings.Repeat("after the flood the engine still publishes ", 8))
	poll.Until(t, "the engine's batches applied", func() bool { return attrs()["kv_batches"] != "0" })
	if h.Exited() {
		t.Fatal("the plugin crashed")
	}
}

// sendOversized connects a PUB socket to the listener, waits for its
// subscription, and sends one frame.
func sendOversized(t *testing.T, endpoint string, frame []byte) {
	t.Helper()
	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer zctx.Term()
	pub, err := zctx.NewSocket(zmq.XPUB)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.SetLinger(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := pub.Connect(endpoint); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.RecvBytes(0); err != nil { // the subscription
		t.Fatal(err)
	}
	if _, err := pub.SendMessage("kv@attacker", make([]byte, 8), frame); err != nil {
		t.Fatal(err)
	}
}

// rss is a process's resident set, in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	kb, err := strconv.ParseInt(procField(b, "VmRSS:"), 10, 64)
	if err != nil {
		t.Fatalf("VmRSS: %v", err)
	}
	return kb << 10
}
