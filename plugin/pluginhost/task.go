package pluginhost

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TaskSpec describes a task the way a jobspec would place it.
type TaskSpec struct {
	AllocID string                 // default: a random UUID-shaped id
	Name    string                 // task name; default "task"
	Group   string                 // task group; default "group"
	Job     string                 // job id; default "job"
	Ports   []*drivers.PortMapping // group network ports, already allocated
	Env     map[string]string      // the task's env stanza, and device env
	CPU     int64                  // MHz; default 100
	Memory  int64                  // MB; default 256
}

// Task is an allocated task: directories on disk, FIFOs being drained the
// way Nomad's logmon drains them, and the TaskConfig Nomad would send.
type Task struct {
	Config         *drivers.TaskConfig
	Stdout, Stderr *LogSink
}

// NewTask builds <root>/<alloc id>/{alloc/{logs,data,tmp},<task>/{local,
// secrets,tmp,private}}, creates the stdout/stderr FIFOs and starts reading
// them, and fills a TaskConfig with Nomad's ids, paths, resources and
// environment (NOMAD_* variables plus the host's, as for a driver without
// filesystem isolation). Set Config.MsgpackDriverConfig before StartTask.
func NewTask(root string, s TaskSpec) (*Task, error) {
	if s.AllocID == "" {
		s.AllocID = randomUUID()
	}
	s.Name = or(s.Name, "task")
	s.Group = or(s.Group, "group")
	s.Job = or(s.Job, "job")
	if s.CPU == 0 {
		s.CPU = 100
	}
	if s.Memory == 0 {
		s.Memory = 256
	}
	allocDir := filepath.Join(root, s.AllocID)
	taskDir := filepath.Join(allocDir, s.Name)
	for _, d := range []string{"alloc/logs", "alloc/data", "alloc/tmp"} {
		if err := os.MkdirAll(filepath.Join(allocDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("alloc dir: %w", err)
		}
	}
	for _, d := range []string{"local", "secrets", "tmp", "private"} {
		if err := os.MkdirAll(filepath.Join(taskDir, d), 0o755); err != nil {
			return nil, fmt.Errorf("task dir: %w", err)
		}
	}
	logs := filepath.Join(allocDir, "alloc", "logs")
	cfg := &drivers.TaskConfig{
		Id:            s.AllocID + "/" + s.Name + "/" + randomHex(4),
		Name:          s.Name,
		AllocId:       s.AllocID,
		AllocDir:      allocDir,
		StdoutPath:    filepath.Join(logs, "."+s.Name+".stdout.fifo"),
		StderrPath:    filepath.Join(logs, "."+s.Name+".stderr.fifo"),
		TaskGroupName: s.Group,
		JobName:       s.Job,
		JobId:         s.Job,
		Namespace:     "default",
		NodeName:      "pluginhost",
		NodeId:        "00000000-0000-0000-0000-000000000001",
		Resources: &drivers.Resources{
			AllocatedResources: &drivers.AllocatedTaskResources{
				Cpu:    &drivers.AllocatedCpuResources{CpuShares: s.CPU},
				Memory: &drivers.AllocatedMemoryResources{MemoryMb: s.Memory},
			},
			LinuxResources: &drivers.LinuxResources{CpuShares: s.CPU, MemoryLimitBytes: s.Memory << 20},
			Ports:          s.Ports,
		},
		Env:       taskEnv(s, allocDir, taskDir),
		DeviceEnv: map[string]string{},
	}
	if v, ok := s.Env["NVIDIA_VISIBLE_DEVICES"]; ok {
		cfg.DeviceEnv["NVIDIA_VISIBLE_DEVICES"] = v
	}
	t := &Task{Config: cfg}
	var err error
	if t.Stdout, err = newLogSink(cfg.StdoutPath, filepath.Join(logs, s.Name+".stdout.0")); err != nil {
		return nil, err
	}
	if t.Stderr, err = newLogSink(cfg.StderrPath, filepath.Join(logs, s.Name+".stderr.0")); err != nil {
		t.Stdout.Close()
		return nil, err
	}
	return t, nil
}

// Close stops draining the FIFOs.
func (t *Task) Close() {
	t.Stdout.Close()
	t.Stderr.Close()
}

func taskEnv(s TaskSpec, allocDir, taskDir string) map[string]string {
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	short, _, _ := strings.Cut(s.AllocID, "-")
	for k, v := range map[string]string{
		"NOMAD_ALLOC_DIR":      filepath.Join(allocDir, "alloc"),
		"NOMAD_TASK_DIR":       filepath.Join(taskDir, "local"),
		"NOMAD_SECRETS_DIR":    filepath.Join(taskDir, "secrets"),
		"NOMAD_ALLOC_ID":       s.AllocID,
		"NOMAD_SHORT_ALLOC_ID": short,
		"NOMAD_ALLOC_NAME":     s.Job + "." + s.Group + "[0]",
		"NOMAD_ALLOC_INDEX":    "0",
		"NOMAD_TASK_NAME":      s.Name,
		"NOMAD_GROUP_NAME":     s.Group,
		"NOMAD_JOB_ID":         s.Job,
		"NOMAD_JOB_NAME":       s.Job,
		"NOMAD_NAMESPACE":      "default",
		"NOMAD_REGION":         "global",
		"NOMAD_DC":             "dc1",
		"NOMAD_CPU_LIMIT":      strconv.FormatInt(s.CPU, 10),
		"NOMAD_MEMORY_LIMIT":   strconv.FormatInt(s.Memory, 10),
	} {
		env[k] = v
	}
	for _, p := range s.Ports {
		port := p.GetValue()
		if p.GetTo() > 0 {
			port = p.GetTo()
		}
		ip := or(p.GetHostIp(), "127.0.0.1")
		l := p.GetLabel()
		env["NOMAD_PORT_"+l] = strconv.Itoa(int(port))
		env["NOMAD_HOST_PORT_"+l] = strconv.Itoa(int(p.GetValue()))
		env["NOMAD_IP_"+l] = ip
		env["NOMAD_HOST_IP_"+l] = ip
		env["NOMAD_ADDR_"+l] = ip + ":" + strconv.Itoa(int(port))
		env["NOMAD_HOST_ADDR_"+l] = ip + ":" + strconv.Itoa(int(p.GetValue()))
		env["NOMAD_ALLOC_PORT_"+l] = strconv.Itoa(int(port))
	}
	for k, v := range s.Env {
		env[k] = v
	}
	return env
}

// LogSink drains one task FIFO into memory and into the log file that
// `nomad alloc logs` would read, as logmon does.
type LogSink struct {
	fifo    *os.File
	file    *os.File
	stopped chan struct{}

	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func newLogSink(fifoPath, logPath string) (*LogSink, error) {
	if err := syscall.Mkfifo(fifoPath, 0o600); err != nil {
		return nil, fmt.Errorf("create fifo %s: %w", fifoPath, err)
	}
	// Opened read-write, so no writer is needed for the open to return and
	// a task exiting does not end the drain: a restarted task writes on.
	fifo, err := os.OpenFile(fifoPath, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open fifo %s: %w", fifoPath, err)
	}
	file, err := os.Create(logPath)
	if err != nil {
		fifo.Close()
		return nil, fmt.Errorf("create log file: %w", err)
	}
	s := &LogSink{fifo: fifo, file: file, stopped: make(chan struct{})}
	go s.drain()
	return s, nil
}

func (s *LogSink) drain() {
	defer close(s.stopped)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.fifo.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.buf.Write(buf[:n])
			s.mu.Unlock()
			_, _ = s.file.Write(buf[:n])
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
				fmt.Fprintf(s.file, "\n[pluginhost: fifo read: %v]\n", err)
			}
			return
		}
	}
}

// String returns everything read so far.
func (s *LogSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Close stops the drain and waits for it.
func (s *LogSink) Close() {
	s.fifo.Close()
	<-s.stopped
	s.file.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUUID() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
