package config

import (
	"strings"
	"testing"
	"time"
)

func TestScaleFromZeroFromFile(t *testing.T) {
	t.Parallel()
	c := Default()
	src := `
nomad {
  scale_from_zero "llama" {
    job          = "vllm-llama"
    group        = "shard"
    count        = 2
    idle_timeout = "10m"
  }
  scale_from_zero "qwen" {
    job   = "vllm-qwen"
    group = "g"
  }
  cold_start_timeout = "90s"
  max_cold_queue     = 8
}`
	if err := c.ParseHCL([]byte(src), "router.hcl"); err != nil {
		t.Fatal(err)
	}
	want := []ScaleFromZero{
		{Model: "llama", Job: "vllm-llama", Group: "shard", Count: 2, IdleTimeout: 10 * time.Minute},
		{Model: "qwen", Job: "vllm-qwen", Group: "g", Count: 1, IdleTimeout: DefaultIdleTimeout},
	}
	n := c.Nomad
	if len(n.ScaleFromZero) != 2 || n.ScaleFromZero[0] != want[0] || n.ScaleFromZero[1] != want[1] || n.ColdStartTimeout != 90*time.Second || n.MaxColdQueue != 8 {
		t.Fatalf("got %+v", n)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if d := Default(); d.Nomad.ColdStartTimeout != DefaultColdStartTimeout || d.Nomad.MaxColdQueue != DefaultMaxColdQueue {
		t.Fatalf("defaults %+v", d.Nomad)
	}
}

func TestScaleFromZeroRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{`nomad {
  scale_from_zero "m" {
    job = "j"
    group = ""
  }
}`, "needs a model, job and group"},
		{`nomad {
  scale_from_zero "m" {
    job = "j"
    group = "g"
  }
  scale_from_zero "m" {
    job = "k"
    group = "g"
  }
}`, "declared twice"},
		{`nomad {
  scale_from_zero "m" {
    job = "j"
    group = "g"
    count = 0
  }
}`, "want at least 1"},
		{`nomad {
  max_cold_queue = -1
}`, "must not be negative"},
		{`nomad {
  scale_from_zero "m" {
    job = "j"
    group = "g"
    idle_timeout = "-1m"
  }
}`, "must not be negative"},
	} {
		c := Default()
		if err := c.ParseHCL([]byte(tc.src), "router.hcl"); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\n: %v; want %q", tc.src, err, tc.want)
		}
	}
	c := Default()
	if err := c.ParseHCL([]byte(`nomad {
  cold_start_timeout = "soon"
}`), "router.hcl"); err == nil || !strings.Contains(err.Error(), "cold_start_timeout") {
		t.Errorf("bad duration: %v", err)
	}
}
