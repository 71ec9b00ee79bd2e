// Package supervisor keeps an engine process alive across plugin restarts
// and remembers how it ended. The plugin binary has a supervise mode (Run):
// started in a session of its own, it starts the engine in a process group
// of its own, reports the engine's pid, waits for it, kills whatever is left
// of the group, and writes the exit status to a file. The plugin side
// (Start, Attach) waits for the supervisor with a pidfd, so a plugin that
// did not start it, after a crash, still learns the true exit code.
//
// By default a supervisor outlives everything above it, as Nomad's executor
// does: a plugin or agent restart must not kill tasks. Only with an Owner
// (Spec.Owner, for one-machine fleets such as `llmgw demo`) does it watch
// that process through a pidfd, checked against the owner's start time so
// a recycled pid is never mistaken for it, and stop the engine when the
// owner dies, however it dies.
//
// It knows nothing about Nomad or vLLM and imports neither.
package supervisor

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Mode is the first argument that selects supervise mode in the plugin binary.
const Mode = "supervise"

// Exit is how an engine ended.
type Exit struct {
	Code     int       `json:"exit_code"`
	Signal   int       `json:"signal,omitempty"`
	Finished time.Time `json:"finished_at"`
	Err      string    `json:"err,omitempty"` // the engine could not be run at all
}

// Run is the supervise mode: args are "-exit-file F [-user U] [-owner
// PID:START [-owner-grace D]] -- engine argv...". The engine's pid is
// written to fd 3 as soon as it runs. The engine inherits stdout, stderr,
// environment and working directory. With -owner, the engine is stopped
// when that process exits (SIGTERM to its group, SIGKILL after the grace),
// and is not started at all if it has exited already. Returns the process
// exit code of the supervisor itself (0 once the exit file is written).
func Run(args []string) int {
	fs := flag.NewFlagSet(Mode, flag.ContinueOnError)
	exitFile := fs.String("exit-file", "", "where to record the engine's exit status")
	runAs := fs.String("user", "", "run the engine as uid:gid[:group,...]")
	ownerFlag := fs.String("owner", "", "PID:START_TICKS of a process whose exit stops the engine")
	grace := fs.Duration("owner-grace", defaultOwnerGrace, "SIGTERM to SIGKILL delay once the owner is gone")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if *exitFile == "" || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "supervisor: usage: supervise -exit-file FILE [-owner PID:START] -- ENGINE [ARGS...]")
		return 2
	}
	// Signals are for the engine's group; the supervisor must live to
	// record the exit, so only SIGKILL ends it early. They are caught and
	// dropped rather than ignored: an ignored signal stays ignored across
	// exec, and the engine must keep the default dispositions.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE,
		syscall.SIGUSR1, syscall.SIGUSR2)
	// fd 3 reports the engine pid; the engine must not inherit it, or the
	// plugin's read would wait for the engine to exit.
	syscall.CloseOnExec(3)
	report := os.NewFile(3, "pid-report")
	// fail reports why the engine could not be run, and records it.
	fail := func(err error) int {
		if report != nil {
			fmt.Fprintln(report, "error", err)
			report.Close()
		}
		return record(*exitFile, Exit{Code: 127, Finished: time.Now(), Err: err.Error()})
	}
	ownerFd := -1
	if *ownerFlag != "" {
		o, err := parseOwner(*ownerFlag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "supervisor:", err)
			return 2
		}
		if ownerFd, err = openPidfd(o.Pid, o.Start); err == nil && exited(ownerFd) {
			unix.Close(ownerFd)
			err = errGone
		}
		if err != nil {
			return fail(fmt.Errorf("owner process %d: %w", o.Pid, err))
		}
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if *runAs != "" {
		cred, err := parseCredential(*runAs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "supervisor:", err)
			return 2
		}
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		if ownerFd >= 0 {
			unix.Close(ownerFd)
		}
		return fail(err)
	}
	engineDone := make(chan struct{})
	if ownerFd >= 0 {
		w, err := watchOwner(ownerFd, cmd.Process.Pid, *grace, engineDone)
		if err != nil {
			// The promise to stop with the owner cannot be kept.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else {
			defer w.stop()
		}
	}
	if report != nil {
		fmt.Fprintln(report, cmd.Process.Pid)
		report.Close()
	}
	err := cmd.Wait()
	close(engineDone)
	ex := Exit{Finished: time.Now()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		ex.Code = ws.ExitStatus()
		if ws.Signaled() {
			ex.Code, ex.Signal = 128+int(ws.Signal()), int(ws.Signal())
		}
	case err != nil:
		ex.Code, ex.Err = 1, err.Error()
	}
	// Workers the engine left behind in its group die with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return record(*exitFile, ex)
}

func record(path string, ex Exit) int {
	b, _ := json.Marshal(ex) // plain struct: cannot fail
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor: record exit:", err)
		return 1
	}
	if err := os.Rename(tmp, path); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor: record exit:", err)
		return 1
	}
	return 0
}

// ReadExit reads an exit file written by Run.
func ReadExit(path string) (Exit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Exit{}, fmt.Errorf("read exit status: %w", err)
	}
	var ex Exit
	if err := json.Unmarshal(b, &ex); err != nil {
		return Exit{}, fmt.Errorf("exit status %s: %w", path, err)
	}
	return ex, nil
}

// Spec says what to supervise.
type Spec struct {
	// Supervisor is the binary with the supervise mode; default: this
	// process's own executable.
	Supervisor string
	Argv       []string // engine argv; Argv[0] is looked up in PATH
	Env        []string
	Dir        string
	// Stdout and Stderr are paths opened for writing (Nomad's FIFOs).
	Stdout, Stderr string
	// ExitFile is where the exit status goes; it must not exist yet.
	ExitFile string
	// User, when set, is the user name (or uid) the engine runs as; the
	// supervisor itself keeps the plugin's identity so it can record the
	// exit. Needs the plugin to run as root.
	User string
	// Owner, when set (Pid > 0), is a process whose exit stops the engine
	// as StopTask would: SIGTERM to its group, SIGKILL after OwnerGrace
	// (default 5s). For one-machine fleets only; see Owner.
	Owner      Owner
	OwnerGrace time.Duration
}

// State is what a later plugin process needs to re-attach.
type State struct {
	SupervisorPid   int    `json:"supervisor_pid"`
	SupervisorStart uint64 `json:"supervisor_start"` // start time in clock ticks, guards against pid reuse
	EnginePid       int    `json:"engine_pid"`       // also the engine's process group id
	ExitFile        string `json:"exit_file"`
}

// Start launches the supervisor and returns once the engine runs (or could
// not be started, which is an error).
func Start(s Spec) (*Process, error) {
	exe := s.Supervisor
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("supervisor binary: %w", err)
		}
	}
	if len(s.Argv) == 0 {
		return nil, errors.New("supervise: empty engine command")
	}
	engine, err := exec.LookPath(s.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("engine binary: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.ExitFile), 0o755); err != nil {
		return nil, fmt.Errorf("exit file dir: %w", err)
	}
	_ = os.Remove(s.ExitFile)
	stdout, err := os.OpenFile(s.Stdout, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(s.Stderr, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open stderr: %w", err)
	}
	defer stderr.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	args := []string{Mode, "-exit-file", s.ExitFile}
	if s.User != "" {
		cred, err := lookupUser(s.User)
		if err != nil {
			return nil, err
		}
		args = append(args, "-user", cred)
	}
	if s.Owner.Pid > 0 {
		args = append(args, "-owner", s.Owner.String())
		if s.OwnerGrace > 0 {
			args = append(args, "-owner-grace", s.OwnerGrace.String())
		}
	}
	args = append(append(args, "--", engine), s.Argv[1:]...)
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Dir = s.Env, s.Dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{pw}
	// A session of its own: the supervisor and the engine outlive the
	// plugin, and signals to the plugin's group do not reach them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	pw.Close()
	// Read the start time before anything reaps the child: until then it
	// exists, at worst as a zombie, even if the engine was quick.
	start, err := startTime(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("supervisor start time: %w", err)
	}
	reaped := make(chan struct{})
	go func() { _ = cmd.Wait(); close(reaped) }()

	line, err := io.ReadAll(io.LimitReader(pr, 4096))
	pid, perr := strconv.Atoi(string(trimNL(line)))
	if err != nil || perr != nil || pid <= 0 {
		<-reaped
		if ex, rerr := ReadExit(s.ExitFile); rerr == nil && ex.Err != "" {
			return nil, fmt.Errorf("start engine: %s", ex.Err)
		}
		return nil, fmt.Errorf("supervisor did not report the engine pid (got %q)", line)
	}
	st := State{SupervisorPid: cmd.Process.Pid, SupervisorStart: start, EnginePid: pid, ExitFile: s.ExitFile}
	return newProcess(st, reaped), nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
