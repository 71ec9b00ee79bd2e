package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/config"
)

// TestRouterConfigLoads renders router configs and loads each with the
// router's own strict loader, so a config the fleet writes is one
// llmgw-router accepts, with the values the fleet relies on.
func TestRouterConfigLoads(t *testing.T) {
	tests := []struct {
		name      string
		scheduler string
		extra     string
		scorers   []string
		pin       bool
	}{
		{"router default", "", "", []string{"prefix", "approx-prefix", "ttft", "load", "session"}, true},
		{"load only", "filter \"model\" {}\nscorer \"load\" {\n  weight = 1\n}\npicker \"max-score\" {}", "", []string{"load"}, true},
		{"data-parallel rank pinning off", "", "pin_data_parallel_rank = false", []string{"prefix", "approx-prefix", "ttft", "load", "session"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := routerConfig(routerConf{ConsulAddr: "127.0.0.1:8500", ServiceID: "llmgw-router-1-0", Model: "org/model-1.5", Scheduler: tt.scheduler, Extra: tt.extra})
			c := config.Default()
			if err := c.ParseHCL([]byte(src), "router.hcl"); err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("validate: %v\n%s", err, src)
			}
			if c.Listen != "127.0.0.1:0" || c.IngestListen != "127.0.0.1:0" {
				t.Errorf("listen %q, ingest %q; want free loopback ports", c.Listen, c.IngestListen)
			}
			if !c.Consul.Register || c.Consul.ServiceID != "llmgw-router-1-0" || c.Consul.Address != "127.0.0.1:8500" ||
				c.Consul.CheckInterval != time.Second || strings.Join(c.Consul.Services, ",") != "vllm" {
				t.Errorf("consul %+v", c.Consul)
			}
			if c.PinDataParallelRank != tt.pin {
				t.Errorf("pin_data_parallel_rank %t; want %t", c.PinDataParallelRank, tt.pin)
			}
			if m, ok := c.Models["org/model-1.5"]; !ok || !m.Sim {
				t.Errorf("models %+v; want org/model-1.5 with the sim tokenizer", c.Models)
			}
			var got []string
			for _, s := range c.Scheduler.Scorers {
				got = append(got, s.Type)
			}
			if strings.Join(got, ",") != strings.Join(tt.scorers, ",") {
				t.Errorf("scorers %v; want %v", got, tt.scorers)
			}
		})
	}
}

func TestOptionsRejected(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		o    Options
		want string
	}{
		{Options{BinDir: dir, Shards: -1}, "Shards must be at least 1"},
		{Options{BinDir: dir, Routers: -2}, "Routers must be at least 1"},
		{Options{BinDir: dir, Model: `a"b`}, `Model "a\"b"`},
		{Options{BinDir: dir, Model: "${x}"}, "Model"},
		{Options{BinDir: dir, FlushInterval: -time.Second}, "FlushInterval must not be negative"},
		{Options{BinDir: dir, DataParallelSize: -4}, "DataParallelSize must not be negative"},
		{Options{BinDir: dir, ConsulBin: dir + "/consul"}, "make build bin/consul"},
	}
	for _, tt := range tests {
		_, err := tt.o.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v; want it to mention %q", tt.o, err, tt.want)
		}
	}
}
