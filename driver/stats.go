package driver

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TaskStats streams CPU and memory of the shard's whole process group, one
// sample per collection interval. Every sample has a timestamp and an
// aggregate usage: without the latter Nomad's client crashes.
func (d *Driver) TaskStats(req *drivers.TaskStatsRequest, stream drivers.Driver_TaskStatsServer) error {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return taskIDErr(req.GetTaskId())
	}
	every := req.GetCollectionInterval().AsDuration()
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var prev sample
	for {
		cur := takeSample(h)
		if err := stream.Send(&drivers.TaskStatsResponse{Stats: cur.stats(h.id, prev)}); err != nil {
			return err
		}
		prev = cur
		select {
		case <-stream.Context().Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

type sample struct {
	at    time.Time
	usage supervisor.Usage
}

func takeSample(h *taskHandle) sample {
	u, err := h.proc.Usage()
	if err != nil || h.exited() {
		u = supervisor.Usage{}
	}
	return sample{at: time.Now(), usage: u}
}

// stats converts a sample to Nomad's form: CPU as percent of one core
// since the previous sample, and as MHz ("ticks") for `alloc status`.
// TotalTicks is not listed as measured, as Nomad's own executor does not
// list it: `nomad alloc status -stats` prints a column for every measured
// CPU field but has no value for Total Ticks, so listing it shifted the
// User Mode figure under the Total Ticks heading. The ticks are shown
// anyway, as the "CPU" used/reserved MHz above that table.
func (s sample) stats(id string, prev sample) *drivers.TaskStats {
	var userPct, sysPct float64
	if !prev.at.IsZero() {
		wall := s.at.Sub(prev.at).Seconds()
		if wall > 0 {
			userPct = pct(s.usage.UserTicks, prev.usage.UserTicks, wall)
			sysPct = pct(s.usage.SysTicks, prev.usage.SysTicks, wall)
		}
	}
	total := userPct + sysPct
	return &drivers.TaskStats{
		Id:        id,
		Timestamp: timestamppb.New(s.at),
		AggResourceUsage: &drivers.TaskResourceUsage{
			Cpu: &drivers.CPUUsage{
				UserMode: userPct, SystemMode: sysPct, Percent: total,
				TotalTicks: total / 100 * cpuMHz(),
				MeasuredFields: []drivers.CPUUsage_Fields{drivers.CPUUsage_USER_MODE, drivers.CPUUsage_SYSTEM_MODE,
					drivers.CPUUsage_PERCENT},
			},
			Memory: &drivers.MemoryUsage{
				Rss: s.usage.RSS, Usage: s.usage.RSS,
				MeasuredFields: []drivers.MemoryUsage_Fields{drivers.MemoryUsage_RSS, drivers.MemoryUsage_USAGE},
			},
		},
	}
}

func pct(cur, prev uint64, wall float64) float64 {
	if cur < prev {
		return 0 // a process of the group ended: its ticks left the sum
	}
	return float64(cur-prev) / supervisor.ClockTicks / wall * 100
}

var (
	mhzOnce sync.Once
	mhz     float64
)

// cpuMHz is one core's clock from /proc/cpuinfo (1000 if unknown).
func cpuMHz() float64 {
	mhzOnce.Do(func() {
		mhz = 1000
		f, err := os.Open("/proc/cpuinfo")
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "cpu MHz" {
				if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && x > 0 {
					mhz = x
				}
				return
			}
		}
	})
	return mhz
}
