package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// trackingDriver is the driver client a Host hands out: it remembers every
// task started or recovered through it, so a test that fails halfway can
// still destroy them all (Reap).
//
// It also registers each task's event handler when Nomad's client would
// (Events, handlers.go).
type trackingDriver struct {
	drivers.DriverClient
	handlers *handlers

	mu      sync.Mutex // guards ids, handles and recovered
	ids     []string   // task ids, first start or recovery first
	handles map[string]*drivers.TaskHandle
	// recovered holds tasks recovered and not called since: Nomad has no
	// event handler for them yet.
	recovered map[string]bool
}

func (d *trackingDriver) StartTask(ctx context.Context, in *drivers.StartTaskRequest, opts ...grpc.CallOption) (*drivers.StartTaskResponse, error) {
	d.handlers.register(in.GetTask())
	resp, err := d.DriverClient.StartTask(ctx, in, opts...)
	if err == nil {
		d.track(resp.GetHandle())
	}
	return resp, err
}

func (d *trackingDriver) RecoverTask(ctx context.Context, in *drivers.RecoverTaskRequest, opts ...grpc.CallOption) (*drivers.RecoverTaskResponse, error) {
	resp, err := d.DriverClient.RecoverTask(ctx, in, opts...)
	if err == nil {
		d.track(in.GetHandle())
		d.recoveredWithoutHandler(in.GetHandle())
	}
	return resp, err
}

func (d *trackingDriver) track(h *drivers.TaskHandle) {
	id := h.GetConfig().GetId()
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.handles == nil {
		d.handles = map[string]*drivers.TaskHandle{}
	}
	if _, ok := d.handles[id]; !ok {
		d.ids = append(d.ids, id)
	}
	d.handles[id] = h
}

// Handles returns the latest handle of every task started or recovered
// through h.Driver, destroyed since or not, in the order they first came.
func (h *Host) Handles() []*drivers.TaskHandle {
	h.tracked.mu.Lock()
	defer h.tracked.mu.Unlock()
	out := make([]*drivers.TaskHandle, 0, len(h.tracked.ids))
	for _, id := range h.tracked.ids {
		out = append(out, h.tracked.handles[id])
	}
	return out
}

// GroupsFunc names the process groups a task runs in, read from its
// handle's driver_state; only the driver under test knows that format.
type GroupsFunc func(*drivers.TaskHandle) []int

// Reap is a test's last word on a host. It force-destroys every task in
// Handles, as Nomad's client destroys an allocation it gives up on (a task
// the plugin no longer knows counts as destroyed), then waits, until ctx is
// done, for every process group that groups names to empty. Whatever is
// still alive then is killed with SIGKILL, and the error names it: a test
// that passed must leave nothing behind. On a plugin that has exited there
// is nobody to destroy the tasks, so their groups are killed at once.
func (h *Host) Reap(ctx context.Context, groups GroupsFunc) error {
	var errs []error
	destroyed := !h.Exited()
	handles := h.Handles()
	if destroyed {
		for _, hd := range handles {
			id := hd.GetConfig().GetId()
			_, err := h.Driver.DestroyTask(ctx, &drivers.DestroyTaskRequest{TaskId: id, Force: true})
			if err != nil && status.Code(err) != codes.NotFound {
				errs = append(errs, fmt.Errorf("force-destroy task %s: %w", id, err))
			}
		}
	}
	for _, hd := range handles {
		if destroyed {
			for _, pgid := range groups(hd) {
				waitEmpty(ctx, pgid)
			}
		}
		if err := KillLeftovers(hd, groups); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// KillLeftovers kills with SIGKILL every process group that groups names
// for the task of hd and that still has a live member, and returns an error
// naming each: after the task's end, none should have.
func KillLeftovers(hd *drivers.TaskHandle, groups GroupsFunc) error {
	var errs []error
	for _, pgid := range groups(hd) {
		if pids := liveMembers(pgid); len(pids) > 0 {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			errs = append(errs, fmt.Errorf("task %s: process group %d (pids %v) outlived its task; killed it",
				hd.GetConfig().GetId(), pgid, pids))
		}
	}
	return errors.Join(errs...)
}

// TB is the part of testing.TB that CloseAtEnd needs; an interface of its
// own keeps the testing package out of the binaries that use this package.
type TB interface {
	Cleanup(func())
	Failed() bool
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// CloseAtEnd registers the host's end with t.Cleanup: Reap with a budget of
// reapBudget, then Close. Reap's error fails the test, or is only logged
// when the test has failed already (its leftovers are then expected).
func (h *Host) CloseAtEnd(t TB, groups GroupsFunc) {
	t.Cleanup(func() {
		defer h.Close()
		ctx, cancel := context.WithTimeout(context.Background(), reapBudget)
		defer cancel()
		if err := h.Reap(ctx, groups); err != nil {
			if t.Failed() {
				t.Logf("cleanup: %v", err)
			} else {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}

// reapBudget bounds how long CloseAtEnd waits for destroyed tasks' groups
// to empty; a forced destroy kills them at once, so this is slack.
const reapBudget = 30 * time.Second

// waitEmpty polls until group pgid has no live member or ctx is done.
func waitEmpty(ctx context.Context, pgid int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(liveMembers(pgid)) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// GroupGone reports whether process group pgid has no live member left.
// Unlike kill(-pgid, 0), it does not count zombies: they have exited and
// wait only for their parent (or init) to reap them.
func GroupGone(pgid int) bool { return len(liveMembers(pgid)) == 0 }

// liveMembers lists the processes of group pgid that have not exited.
// Zombies are dead already (they wait only for their parent to reap them),
// so they do not count.
func liveMembers(pgid int) []int {
	if pgid <= 0 {
		return nil
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited while we looked
		}
		// Fields after the command name: state, ppid, pgrp, ...
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}
