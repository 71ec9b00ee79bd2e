package supervisor

import (
	"os"
	"strconv"
)

// Usage is the summed resource use of a process group at one moment.
type Usage struct {
	Pids      []int
	UserTicks uint64 // clock ticks in user mode, summed
	SysTicks  uint64 // clock ticks in kernel mode, summed
	RSS       uint64 // resident bytes, summed
}

// ClockTicks is the kernel's USER_HZ, the unit of UserTicks and SysTicks.
// Linux reports 100 on every architecture Nomad supports.
const ClockTicks = 100

// Usage sums CPU time and resident memory over every live process of the
// engine's process group (the engine and the workers it spawned).
func (p *Process) Usage() (Usage, error) {
	return GroupUsage(p.st.EnginePid)
}

// GroupUsage sums CPU time and resident memory over the processes whose
// process group is pgid.
func GroupUsage(pgid int) (Usage, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return Usage{}, err
	}
	page := uint64(os.Getpagesize())
	var u Usage
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || f[2] != strconv.Itoa(pgid) || f[0] == "Z" {
			continue // gone meanwhile, another group, or a zombie
		}
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		rss, _ := strconv.ParseUint(f[21], 10, 64)
		u.Pids = append(u.Pids, pid)
		u.UserTicks += ut
		u.SysTicks += st
		u.RSS += rss * page
	}
	return u, nil
}
