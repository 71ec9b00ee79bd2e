package driver_test

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// groupVMRSS sums VmRSS from /proc/PID/status over the live members of
// process group pgid, as an operator would with ps or top.
func groupVMRSS(t *testing.T, pgid int) (bytes uint64, pids []int) {
	t.Helper()
	dir, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(st[bytesLastParen(st)+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) || f[0] == "Z" {
			continue
		}
		status, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(status)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				bytes += kb << 10
				pids = append(pids, pid)
			}
		}
		status.Close()
	}
	return bytes, pids
}

func bytesLastParen(b []byte) int { return bytes.LastIndexByte(b, ')') }

// TestStatsMatchProc: the memory the driver reports for a shard (what
// `nomad alloc status -stats` shows) is the engine's process group's
// resident memory as /proc/PID/status has it, and CPU is a percentage of
// one core with ticks in MHz, measured in the fields Nomad's CLI can
// print.
func TestStatsMatchProc(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	defer stop(t, h, id)
	ev.next(t, "model ready")
	pid := enginePid(t, h, id)

	stream, err := h.Driver.TaskStats(ctx(t), &drivers.TaskStatsRequest{TaskId: id, CollectionInterval: durationpb.New(100 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		before, _ := groupVMRSS(t, pid)
		s, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		after, pids := groupVMRSS(t, pid)
		mem := s.GetStats().GetAggResourceUsage().GetMemory()
		lo, hi := min(before, after), max(before, after)
		// The engine may grow between the reads: allow a tenth either side.
		if got := mem.GetRss(); got < lo-lo/10 || got > hi+hi/10 || lo < 1<<20 {
			t.Errorf("sample %d: RSS %d bytes; /proc/PID/status VmRSS of group %d (pids %v) is %d..%d", i, got, pid, pids, lo, hi)
		}
		cpu := s.GetStats().GetAggResourceUsage().GetCpu()
		if cpu.GetPercent() < 0 || cpu.GetTotalTicks() < 0 || (cpu.GetPercent() > 0) != (cpu.GetTotalTicks() > 0) {
			t.Errorf("sample %d: cpu %v; want a percentage and MHz, both zero or both not", i, cpu)
		}
		// `nomad alloc status -stats` prints one column per measured CPU
		// field, and a value for each but Total Ticks: measured, it shifts
		// the table. Nomad's executor measures these three.
		want := []drivers.CPUUsage_Fields{drivers.CPUUsage_USER_MODE, drivers.CPUUsage_SYSTEM_MODE, drivers.CPUUsage_PERCENT}
		if got := cpu.GetMeasuredFields(); !slices.Equal(got, want) {
			t.Errorf("sample %d: measured CPU fields %v; want %v", i, got, want)
		}
	}
}
