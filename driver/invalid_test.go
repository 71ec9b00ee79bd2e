package driver_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestInvalidTaskConfigs: StartTask fails with a message naming the field,
// for configs Nomad would pass (bad values) and bytes it never would
// (unknown fields, wrong types, garbage); the plugin survives all of them.
func TestInvalidTaskConfigs(t *testing.T) {
	h := launch(t, simBin)
	tests := []struct {
		name string
		raw  []byte         // sent as is, when set
		cfg  map[string]any // else encoded the way Nomad does
		want string
	}{
		{"unknown field", []byte("\x82\xa5model\xa1m\xa7colours\xc3"), nil, "colours: unknown attribute"},
		{"wrong type", []byte("\x81\xa5model\x07"), nil, "model: want a string"},
		{"missing model", []byte("\x81\xa4port\xa4http"), nil, "model: must not be empty"},
		{"nested wrong type", []byte("\x82\xa5model\xa1m\xa5shard\x81\xa4rank\xa3one"), nil, "shard.rank"},
		{"garbage", []byte("\xdd\xff\xff\xff\xff"), nil, "malformed msgpack"},
		{"empty", []byte{}, nil, "empty config"},
		{"bad port label", nil, map[string]any{"model": "m", "port": "grpc"}, `port: no port labelled "grpc"`},
		{"bad block size", nil, map[string]any{"model": "m", "block_size": 5000}, "block_size"},
		{"args set the port", nil, map[string]any{"model": "m", "args": []string{"--port", "9000"}},
			`args[0]: --port: the driver serves the API on the port Nomad allocated to label "http"`},
		{"args set the block size", nil, map[string]any{"model": "m", "args": []string{"--enforce-eager", "--block-size=32"}},
			"args[1]: --block-size: the driver passes block_size (16)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := newTask(t, h, map[string]any{"model": "placeholder"})
			task.Config.MsgpackDriverConfig = tt.raw
			if tt.cfg != nil {
				if err := h.EncodeTaskConfig(ctx(t), task, tt.cfg); err != nil {
					t.Fatal(err)
				}
			}
			_, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: task.Config})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want InvalidArgument naming %q", err, tt.want)
			}
		})
	}
	if _, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("start without a task: %v", err)
	}
	for _, id := range []string{"", "nope"} {
		if _, err := h.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: id}); err == nil {
			t.Errorf("wait %q succeeded", id)
		}
		if _, err := h.Driver.SignalTask(ctx(t), &drivers.SignalTaskRequest{TaskId: id, Signal: "SIGHUP"}); err == nil {
			t.Errorf("signal %q succeeded", id)
		}
		if _, err := h.Driver.StopTask(ctx(t), &drivers.StopTaskRequest{TaskId: id}); err != nil {
			t.Errorf("stop %q: %v; unknown tasks stop successfully", id, err)
		}
		if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
			t.Errorf("destroy %q: %v", id, err)
		}
	}
	if h.Exited() {
		t.Fatal("the plugin crashed")
	}
}
