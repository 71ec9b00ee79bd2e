package supervisor_test

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestMain doubles as the plugin binary's supervise mode.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervisor.Mode {
		os.Exit(supervisor.Run(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

type env struct {
	dir            string
	stdout, stderr string
}

func newEnv(t *testing.T) env {
	t.Helper()
	dir := t.TempDir()
	e := env{dir: dir, stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr")}
	for _, p := range []string{e.stdout, e.stderr} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e env) spec(script string) supervisor.Spec {
	return supervisor.Spec{
		Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH"), "GREETING=hello"},
		Dir: e.dir, Stdout: e.stdout, Stderr: e.stderr, ExitFile: filepath.Join(e.dir, "private", "exit.json"),
	}
}

func wait(t *testing.T, p *supervisor.Process) supervisor.Exit {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(poll.Timeout):
		t.Fatal("supervisor did not exit")
	}
	ex, err := p.Exit()
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// waitGroupSize waits until the engine's process group has n processes
// (the engine and its workers).
func waitGroupSize(t *testing.T, p *supervisor.Process, n int) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("%d processes in the engine's group", n), func() bool {
		u, _ := p.Usage()
		return len(u.Pids) == n
	})
}

func TestExitCodeAndOutput(t *testing.T) {
	e := newEnv(t)
	p, err := supervisor.Start(e.spec(`echo "$GREETING from $(pwd)"; echo oops >&2; exit 7`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if ex := wait(t, p); ex.Code != 7 || ex.Signal != 0 {
		t.Errorf("exit %+v; want code 7", ex)
	}
	out, _ := os.ReadFile(e.stdout)
	if string(out) != "hello from "+e.dir+"\n" {
		t.Errorf("stdout %q", out)
	}
	errOut, _ := os.ReadFile(e.stderr)
	if string(errOut) != "oops\n" {
		t.Errorf("stderr %q", errOut)
	}
}

func TestSignalKillsTheWholeGroup(t *testing.T) {
	e := newEnv(t)
	// A worker in the background, like vLLM's engine-core processes.
	p, err := supervisor.Start(e.spec(`sleep 300 & echo worker $!; wait`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitGroupSize(t, p, 2)
	u, err := p.Usage()
	if err != nil || u.RSS == 0 {
		t.Errorf("usage %+v, %v", u, err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ex := wait(t, p); ex.Signal != int(syscall.SIGTERM) || ex.Code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %+v; want SIGTERM", ex)
	}
	poll.Until(t, "the process group to vanish", func() bool { return syscall.Kill(-p.EnginePid(), 0) == syscall.ESRCH })
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("signal after exit: %v", err)
	}
}

// TestAttach re-attaches from State alone, as a restarted plugin does,
// and still learns the true exit code.
func TestAttach(t *testing.T) {
	e := newEnv(t)
	marker := filepath.Join(e.dir, "go")
	p, err := supervisor.Start(e.spec(`while [ ! -e ` + marker + ` ]; do sleep 0.02; done; exit 42`))
	if err != nil {
		t.Fatal(err)
	}
	st := p.State()
	p.Close()

	a, err := supervisor.Attach(st)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	select {
	case <-a.Done():
		t.Fatal("attached process reported done while running")
	default:
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ex := wait(t, a); ex.Code != 42 {
		t.Errorf("exit %+v; want 42", ex)
	}
	// Attaching after the exit reads the recorded status.
	b, err := supervisor.Attach(st)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ex := wait(t, b); ex.Code != 42 {
		t.Errorf("exit after late attach %+v; want 42", ex)
	}
}

func TestAttachRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		st   supervisor.State
		want string
	}{
		{"incomplete", supervisor.State{}, "incomplete state"},
		{"reused pid", supervisor.State{SupervisorPid: os.Getpid(), SupervisorStart: 1, EnginePid: 1, ExitFile: filepath.Join(dir, "none")},
			"left no exit status"},
	}
	for _, tt := range tests {
		if _, err := supervisor.Attach(tt.st); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v; want %q", tt.name, err, tt.want)
		}
	}
}

func TestStartErrors(t *testing.T) {
	e := newEnv(t)
	s := e.spec("true")
	s.Argv = []string{"no-such-engine-binary"}
	if _, err := supervisor.Start(s); err == nil || !strings.Contains(err.Error(), "engine binary") {
		t.Errorf("missing engine: got %v", err)
	}
	s = e.spec("true")
	s.Stdout = filepath.Join(e.dir, "missing", "fifo")
	if _, err := supervisor.Start(s); err == nil || !strings.Contains(err.Error(), "open stdout") {
		t.Errorf("missing stdout: got %v", err)
	}
}

// BenchmarkStartExit measures the supervisor's overhead per task: start the
// supervisor and a trivial engine, report the pid, wait, record the exit.
func BenchmarkStartExit(b *testing.B) {
	dir := b.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	spec := supervisor.Spec{Argv: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}, Dir: dir,
		Stdout: out, Stderr: out, ExitFile: filepath.Join(dir, "exit.json")}
	for b.Loop() {
		p, err := supervisor.Start(spec)
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
		if ex, err := p.Exit(); err != nil || ex.Code != 0 {
			b.Fatalf("exit %+v, %v", ex, err)
		}
		p.Close()
	}
}

// BenchmarkGroupUsage measures one TaskStats sample: a scan of /proc for
// the engine's process group.
func BenchmarkGroupUsage(b *testing.B) {
	for b.Loop() {
		if _, err := supervisor.GroupUsage(syscall.Getpgrp()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQuickEngine: an engine that exits before Start returns is still a
// normal start whose exit is known.
func TestQuickEngine(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		p, err := supervisor.Start(e.spec("exit 3"))
		if err != nil {
			t.Fatal(err)
		}
		if ex := wait(t, p); ex.Code != 3 {
			t.Errorf("exit %+v; want 3", ex)
		}
		p.Close()
	}
}

// TestRunAsUser: the engine runs as the task's user, the supervisor as the
// plugin (so it can still record the exit).
func TestRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user")
	}
	e := newEnv(t)
	s := e.spec("id -u; id -g")
	s.User = "nobody"
	p, err := supervisor.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if ex := wait(t, p); ex.Code != 0 {
		t.Fatalf("exit %+v", ex)
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(e.stdout)
	if string(out) != u.Uid+"\n"+u.Gid+"\n" {
		t.Errorf("engine ran as %q; want uid %s gid %s", out, u.Uid, u.Gid)
	}
	s.User = "no-such-user-here"
	if _, err := supervisor.Start(s); err == nil || !strings.Contains(err.Error(), "no-such-user-here") {
		t.Errorf("unknown user: got %v", err)
	}
}
