package jobs

import (
	"strings"
	"testing"
)

// replicaJob is a valid one-task jobspec; %CONFIG% and %SERVICE% are
// replaced by the cases below.
const replicaJob = `job "j" {
  group "g" {
    network {
      port "http" {}
    }
    task "t" {
      driver = "vllm"
      config {
%CONFIG%
      }
      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
%SERVICE%
        check {
          type = "http"
          path = "/health"
        }
      }
      shutdown_delay = "5s"
    }
  }
}
`

const metaBlock = `        meta {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "false"
        }`

// TestValidVariations covers forms Nomad accepts that the validator must
// not flag: client-side interpolation, input variables, meta as a map,
// numbers in meta, and tasks of other drivers.
func TestValidVariations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, service string
	}{
		{"plain", `model = "m"`, metaBlock},
		{"client interpolation", `model = "m"
        args = ["--download-dir", "${NOMAD_ALLOC_DIR}/models", "--host-ip", "${attr.unique.network.ip-address}"]
        env = { HOME = "${env["HOME"]}", DC = "${node.datacenter}" }`, metaBlock},
		{"input variables: types only", `model = var.model
        block_size = var.block_size`, metaBlock},
		{"meta as a map with a number", `model = "m"`, `        meta = {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = 16
          llmgw-kv-events  = false
        }`},
		{"served name in meta", `model = "org/m"
        served_model_name = "m"`, metaBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.NewReplacer("%CONFIG%", "        "+tt.config, "%SERVICE%", tt.service).Replace(replicaJob)
			for _, p := range Validate("v.nomad.hcl", []byte(src)) {
				t.Errorf("%s\n%s", p, src)
			}
		})
	}
	other := `job "j" {
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image = "x"
      }
    }
  }
}
`
	if p := Validate("other.nomad.hcl", []byte(other)); len(p) != 0 {
		t.Errorf("a docker task got problems %v; only vllm tasks are checked", p)
	}
}

// TestMetaMismatches checks that meta must agree with the task config.
func TestMetaMismatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, meta, want string
	}{
		{"model", `model = "org/m"`, metaBlock, `meta llmgw-model is "m"; want "org/m"`},
		{"replica", `model = "m"`, strings.Replace(metaBlock, "${NOMAD_TASK_NAME}", "${NOMAD_TASK_NAME}-x", 1), `meta llmgw-replica is "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}-x"`},
		{"kv events", `model = "m"
        kv_events = true`, metaBlock, `meta llmgw-kv-events is "false"; want "true"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.NewReplacer("%CONFIG%", "        "+tt.config, "%SERVICE%", tt.meta).Replace(replicaJob)
			problems := Validate("m.nomad.hcl", []byte(src))
			if len(problems) != 1 || !strings.Contains(problems[0].Message, tt.want) {
				t.Errorf("got %v; want one problem containing %q", problems, tt.want)
			}
		})
	}
}
