package driver_test

import (
	"strings"
	"testing"
)

// TestEngineBlockSizeEvent: a task asks for block_size 16 (the default,
// and what its llmgw-block-size meta says), but its engine runs at 64 as
// vLLM forces it for an MLA model on FlashMLA (vllm-sim --sim-mla). Once
// the engine's events carry 64, the driver raises a task event naming
// both sizes, once; a task whose engine keeps its size raises none.
func TestEngineBlockSizeEvent(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	prompt := strings.Repeat("alpha beta gamma delta ", 40)
	run := func(args ...string) string {
		task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": append([]string{"--sim-latency=false"}, args...)})
		start(t, h, task.Config)
		t.Cleanup(func() { stop(t, h, task.Config.GetId()) })
		ev.next(t, "model ready")
		complete(t, engineURL(task), prompt)
		return task.Config.GetId()
	}
	plain := run()
	mla := run("--sim-mla")
	// The plain task's watcher ticked before the MLA one's: an event of
	// its own would come first.
	e := ev.next(t, "engine block size")
	if e.GetTaskId() != mla || !strings.HasPrefix(e.GetMessage(), "engine block size 64 differs from block_size 16") {
		t.Errorf("event %q for task %s; want one naming 64 and 16 for %s, whose engine runs at 64", e.GetMessage(), e.GetTaskId(), mla)
	}
	if a := e.GetAnnotations(); a["engine_block_size"] != "64" || a["block_size"] != "16" {
		t.Errorf("annotations %v; want engine_block_size 64, block_size 16", a)
	}
	for _, later := range ev.until(t, marker(t, h)) {
		if strings.HasPrefix(later.GetMessage(), "engine block size") {
			t.Errorf("event %q on %s; want one event, for %s only (not %s)", later.GetMessage(), later.GetTaskId(), mla, plain)
		}
	}
}

// TestOffloadPlaceholdersEvent: an engine whose offloading connector
// sends its CPU stores without their blocks (vllm-sim
// --sim-cpu-offload-placeholders, as vLLM without
// self_describing_kv_events) gets a task event saying its CPU tier is not
// indexed and what to set; one whose CPU stores describe their blocks
// gets none.
func TestOffloadPlaceholdersEvent(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	prompt := strings.Repeat("alpha beta gamma delta ", 40)
	run := func(args ...string) string {
		base := []string{"--sim-latency=false", "--sim-cpu-offload-blocks", "64"}
		task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": append(base, args...)})
		start(t, h, task.Config)
		t.Cleanup(func() { stop(t, h, task.Config.GetId()) })
		ev.next(t, "model ready")
		complete(t, engineURL(task), prompt)
		return task.Config.GetId()
	}
	described := run()
	placeholders := run("--sim-cpu-offload-placeholders")
	e := ev.next(t, "CPU tier not indexed")
	if e.GetTaskId() != placeholders || !strings.Contains(e.GetMessage(), "self_describing_kv_events") {
		t.Errorf("event %q for task %s; want one naming self_describing_kv_events for %s", e.GetMessage(), e.GetTaskId(), placeholders)
	}
	if n := e.GetAnnotations()["kv_offload_placeholders"]; n == "" || n == "0" {
		t.Errorf("annotations %v; want the placeholders counted", e.GetAnnotations())
	}
	for _, later := range ev.until(t, marker(t, h)) {
		if strings.HasPrefix(later.GetMessage(), "CPU tier not indexed") {
			t.Errorf("event %q on %s; want one event, for %s only (not %s)", later.GetMessage(), later.GetTaskId(), placeholders, described)
		}
	}
}
