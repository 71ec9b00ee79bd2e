package driver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// taskHandle is one running (or exited) shard. Its goroutines, the exit
// waiter and the health watcher, stop with the driver's context or detach.
type taskHandle struct {
	id     string
	cfg    *drivers.TaskConfig // as Nomad sent it (echoed in the handle)
	state  TaskState
	proc   *supervisor.Process
	log    hclog.Logger
	done   chan struct{} // closed once the exit is recorded
	cancel context.CancelFunc

	mu          sync.Mutex // guards exit, exitErr, completedAt, ready, stopping
	exit        supervisor.Exit
	exitErr     error
	completedAt time.Time
	ready       bool
	// stopping is set once Nomad asked for the stop (StopTask, or
	// DestroyTask with force): the exit is then Nomad's own doing.
	stopping bool
}

// markStopping records that Nomad asked the shard to stop.
func (h *taskHandle) markStopping() {
	h.mu.Lock()
	h.stopping = true
	h.mu.Unlock()
}

// run starts the handle's goroutines under the driver's context.
func (d *Driver) run(h *taskHandle) {
	ctx, cancel := context.WithCancel(d.ctx)
	h.cancel = cancel
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		h.waitExit(ctx, d)
	}()
	go func() {
		defer d.wg.Done()
		h.watchHealth(ctx, d)
	}()
}

// waitExit records the engine's exit, reports it, and closes done.
//
// An exit Nomad did not ask for (a crash, the OOM killer, a kill from
// outside) is a Driver event, emitted before done closes: WaitTask answers
// only after it, so the event is on the stream while Nomad still handles
// the task's events. An exit Nomad asked for (StopTask, DestroyTask) is
// not: Nomad records that kill in its own events, exit code included, and
// when it stops an allocation it is removing (`job stop -purge`, garbage
// collection) it has dropped the task's event handler already, so an
// event would only be logged as having no handler. The plugin log has
// every exit.
func (h *taskHandle) waitExit(ctx context.Context, d *Driver) {
	select {
	case <-h.proc.Done():
	case <-ctx.Done():
		return // detached: the shard runs on
	}
	ex, err := h.proc.Exit()
	if err != nil {
		// The supervisor died without recording the exit (killed itself):
		// the engine's group may live on unsupervised. End it, so nothing
		// of the shard outlives its task.
		h.log.Error("supervisor lost; killing the engine's process group", "error", err)
		_ = syscall.Kill(-h.proc.EnginePid(), syscall.SIGKILL)
	}
	h.mu.Lock()
	h.exit, h.exitErr, h.completedAt = ex, err, time.Now()
	requested := h.stopping
	h.mu.Unlock()
	h.log.Info("engine exited", "exit_code", ex.Code, "signal", ex.Signal, "error", err, "stop_requested", requested)
	switch {
	case requested:
	case err != nil:
		// The exit status is unknown, not 0: say what happened instead.
		d.events.emit(h.cfg, "engine exited unrecorded: "+err.Error()+"; engine's process group killed",
			map[string]string{"error": err.Error()})
	default:
		d.events.emit(h.cfg, "engine exited with code "+strconv.Itoa(ex.Code), map[string]string{
			"exit_code": strconv.Itoa(ex.Code), "signal": strconv.Itoa(ex.Signal)})
	}
	close(h.done)
}

// watchHealth polls the engine's /health until it answers 200 once, then
// emits "model ready", which the Nomad UI shows as a Driver event.
func (h *taskHandle) watchHealth(ctx context.Context, d *Driver) {
	if h.state.HTTPPort == 0 {
		return // headless shard: no API
	}
	host := h.state.HTTPHost
	if host == "0.0.0.0" || host == "" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(h.state.HTTPPort)) + "/health"
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(d.opts.HealthPoll)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				h.mu.Lock()
				h.ready = true
				h.mu.Unlock()
				d.events.emit(h.cfg, "model ready", map[string]string{"url": url})
				h.watchKV(ctx, d)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			return
		case <-tick.C:
		}
	}
}

// detach stops the handle's goroutines and leaves the shard running.
func (h *taskHandle) detach() {
	if h.cancel != nil {
		h.cancel()
	}
	h.proc.Close()
}

// exited reports whether the engine has exited.
func (h *taskHandle) exited() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

func (h *taskHandle) result() (*drivers.ExitResult, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res := &drivers.ExitResult{ExitCode: int32(h.exit.Code), Signal: int32(h.exit.Signal)}
	msg := h.exit.Err
	if h.exitErr != nil {
		msg = h.exitErr.Error()
		if res.ExitCode == 0 {
			res.ExitCode = 1 // unknown end: never report success
		}
	}
	return res, msg
}

// kvWatchEvery is how often a ready shard's KV counters are checked.
const kvWatchEvery = 5 * time.Second

// watchKV reports, as Driver events, KV batches the listener could not
// recover and engine restarts it saw (routers route the replica
// approximately until its state is whole again), an engine block size
// other than block_size, and an offloaded tier the events do not
// describe.
func (h *taskHandle) watchKV(ctx context.Context, d *Driver) {
	l, ok := d.kv.lookup(h.state.Replica)
	if !ok {
		return
	}
	base := l.Counters()
	seenSize := 0 // the engine block size last compared with block_size
	tick := time.NewTicker(kvWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.done:
			return
		case <-tick.C:
		}
		l, ok := d.kv.lookup(h.state.Replica)
		if !ok {
			return
		}
		c := l.Counters()
		if c.Lost > base.Lost {
			d.events.emit(h.cfg, "KV events: "+strconv.FormatUint(c.Lost-base.Lost, 10)+" batches lost and not replayed",
				map[string]string{"kv_lost": strconv.FormatUint(c.Lost, 10)})
		}
		if c.Restarts > base.Restarts {
			d.events.emit(h.cfg, "restart seen: the engine's KV event sequence started over; its blocks were cleared",
				map[string]string{"kv_restarts": strconv.FormatUint(c.Restarts, 10)})
		}
		seenSize = h.reportBlockSize(d, c.BlockSize, seenSize)
		if c.OffloadPlaceholders > 0 && base.OffloadPlaceholders == 0 {
			d.events.emit(h.cfg, "CPU tier not indexed: the engine's offloading connector sends its stores without their blocks; "+
				`set "self_describing_kv_events": true in --kv-transfer-config's kv_connector_extra_config`,
				map[string]string{"kv_offload_placeholders": strconv.FormatUint(c.OffloadPlaceholders, 10)})
		}
		base = c
	}
}

// reportBlockSize raises a task event when the engine's events carry a
// block size other than seen and other than the task's block_size, and
// returns the size it compared. vLLM overrides the size it is given
// (FlashMLA forces a multiple of 64; a hybrid model's attention block
// grows to hold its Mamba page); routers key the replica at the engine's
// size either way, but the service meta llmgw-block-size, which jobs
// validate checks against block_size, is then wrong.
func (h *taskHandle) reportBlockSize(d *Driver, engine, seen int) int {
	configured := h.state.Task.BlockSize
	if engine == 0 || engine == seen {
		return seen
	}
	if engine == configured {
		return engine
	}
	d.events.emit(h.cfg, fmt.Sprintf("engine block size %d differs from block_size %d: vLLM overrode it; routers key the replica at %d, so set block_size and the llmgw-block-size meta to it", engine, configured, engine),
		map[string]string{"block_size": strconv.Itoa(configured), "engine_block_size": strconv.Itoa(engine)})
	return engine
}
