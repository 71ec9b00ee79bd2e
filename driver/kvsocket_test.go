package driver_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// connectProbeMode makes the test binary try to connect to each Unix
// socket path in its arguments and print one errno per line (0: it
// connected), as a process of another user would.
const connectProbeMode = "kv-connect-probe"

// connectProbe is the probe's main.
func connectProbe(paths []string) int {
	for _, p := range paths {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: p})
		_ = syscall.Close(fd)
		var errno syscall.Errno
		if err != nil && !errors.As(err, &errno) {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(int(errno))
	}
	return 0
}

// TestKVSocketPrivate: over the real plugin binary, a data-parallel-2
// shard's engine binds its KV-event and replay sockets in a directory of
// its task's own, mode 0700 and owned by the engine's user; a process of
// another user cannot connect to any of them (EACCES), while one of the
// engine's user can; and both ranks' events reach the driver.
func TestKVSocketPrivate(t *testing.T) {
	h := launch(t, simBin) // kv_transport defaults to ipc
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "data_parallel_size": 2})
	id := task.Config.GetId()
	start(t, h, task.Config)
	defer stop(t, h, id)
	if e := ev.next(t, "KV events"); e.GetAnnotations()["kv_socket_dir"] == "" {
		t.Errorf("KV event %q %v; want events over ipc sockets", e.GetMessage(), e.GetAnnotations())
	}
	ev.next(t, "model ready")
	dir := filepath.Join(task.Config.GetAllocDir(), "shard", "llmgw-kv")
	if got := inspect(t, h, id).GetDriver().GetAttributes()["kv_socket_dir"]; got != dir {
		t.Fatalf("kv_socket_dir %q; want %s", got, dir)
	}
	engineUID := ownerUID(t, "/proc/"+strconv.Itoa(enginePid(t, h, id)))
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || ownerUID(t, dir) != engineUID {
		t.Errorf("socket directory %s: mode %v, owner %d; want a directory of mode 0700 owned by the engine's user %d",
			dir, fi.Mode(), ownerUID(t, dir), engineUID)
	}
	sockets := socketPaths(dir, 2)
	poll.Until(t, "the engine's four sockets", func() bool {
		for _, p := range sockets {
			if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != os.ModeSocket {
				return false
			}
		}
		return true
	})

	url := engineURL(task)
	spreadOverRanks(t, url)
	waitInSync(t, func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }, url)
	assertBothRanks(t, url)

	if os.Geteuid() != 0 {
		t.Skip("not root: cannot start a process as another user to show it is refused")
	}
	probe := probeBinary(t)
	if got := runProbe(t, probe, engineUID, sockets); !allErrno(got, 0) {
		t.Errorf("the engine's user connecting: errnos %v; want 0 (connected) for each socket", got)
	}
	const otherUID = 65533
	if got := runProbe(t, probe, otherUID, sockets); !allErrno(got, syscall.EACCES) {
		t.Errorf("uid %d connecting: errnos %v; want EACCES (%d) for each socket", otherUID, got, int(syscall.EACCES))
	}
}

// socketPaths are the event and replay socket paths of ranks ranks in dir.
func socketPaths(dir string, ranks int) []string {
	events, replay := intake.IPCEndpoints(dir)
	var out []string
	for rank := range ranks {
		for _, ep := range []string{events, replay} {
			out = append(out, strings.TrimPrefix(intake.RankEndpoint(ep, rank), "ipc://"))
		}
	}
	return out
}

func ownerUID(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// probeBinary copies the test binary where every user may run it: the
// build directory it runs from is its builder's alone.
func probeBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(reachableTempDir(t), "probe")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// runProbe runs the probe as uid (gid the same, no supplementary groups)
// and returns the errno of each connection.
func runProbe(t *testing.T, probe string, uid uint32, paths []string) []syscall.Errno {
	t.Helper()
	cmd := exec.Command(probe, append([]string{connectProbeMode}, paths...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe as uid %d: %v", uid, err)
	}
	var got []syscall.Errno
	for _, f := range strings.Fields(string(out)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("probe output %q", out)
		}
		got = append(got, syscall.Errno(n))
	}
	if len(got) != len(paths) {
		t.Fatalf("probe answered %v for %d paths", got, len(paths))
	}
	return got
}

func allErrno(got []syscall.Errno, want syscall.Errno) bool {
	for _, e := range got {
		if e != want {
			return false
		}
	}
	return len(got) > 0
}

// TestKVSocketFallsBackToTCP: a task directory so deep that its socket
// paths would not fit a Unix socket address, or one the engine's user
// cannot enter (vLLM exits when it cannot bind), gets loopback TCP, with
// a task event saying why, and its events still arrive; so does every
// task of a plugin configured with kv_transport "tcp", with no socket
// directory made.
func TestKVSocketFallsBackToTCP(t *testing.T) {
	deep := filepath.Join(reachableTempDir(t), strings.Repeat("d", 64))
	if err := os.Mkdir(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	closed, err := os.MkdirTemp("", "drv") // mode 0700, root's when the test runs as root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(closed) })
	tests := []struct {
		name   string
		plugin map[string]any
		root   string
		event  string // the start of an event before "KV events on", "" for none
	}{
		{"path too long", nil, deep, "KV events over loopback TCP, reachable by any local process: socket path"},
		{"task directory closed to the engine's user", nil, closed,
			"KV events over loopback TCP, reachable by any local process: the engine's user"},
		{"tcp configured", map[string]any{"kv_transport": "tcp"}, reachableTempDir(t), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root == closed && os.Geteuid() != 0 {
				t.Skip("not root: engines run as the plugin's own user, who made the directory")
			}
			h := launchWith(t, simBin, tt.plugin)
			ev := watchEvents(t, h)
			task := newTaskIn(t, h, tt.root, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
			id := task.Config.GetId()
			start(t, h, task.Config)
			defer stop(t, h, id)
			if tt.event != "" {
				ev.next(t, tt.event)
			}
			if e := ev.next(t, "KV events on"); !strings.HasPrefix(e.GetMessage(), "KV events on: listening on port ") {
				t.Errorf("event %q; want events over a loopback port", e.GetMessage())
			}
			ev.next(t, "model ready")
			attrs := inspect(t, h, id).GetDriver().GetAttributes()
			if attrs["kv_port"] == "" || attrs["kv_socket_dir"] != "" {
				t.Errorf("attributes %v; want a kv_port and no kv_socket_dir", attrs)
			}
			if _, err := os.Lstat(filepath.Join(task.Config.GetAllocDir(), "shard", "llmgw-kv")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("socket directory: %v; want none made", err)
			}
			url := engineURL(task)
			complete(t, url, strings.Repeat("alpha beta gamma delta ", 12))
			waitInSync(t, func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }, url)
		})
	}
}
