package jobs

import (
	"strings"
	"testing"
)

// scalingJob is a valid one-replica group serving model "m"; %COUNT%,
// %SHARD% and %SCALING% are replaced by the cases below.
const scalingJob = `job "j" {
  group "g" {
    count = %COUNT%
%SCALING%
    network {
      port "http" {}
    }
    task "t" {
      driver = "vllm"
      config {
        model = "m"
%SHARD%
      }
      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "false"
        }
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

// scalingBlock is a valid policy on llmgw's signal for model "m"; the
// cases edit it.
const scalingBlock = `    scaling {
      enabled = false
      min     = 1
      max     = 4
      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"
        check "r" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_recommended{model=\"m\"}[5m]))"
          strategy "pass-through" {}
        }
      }
    }`

func scalingSpec(count, scaling, shard string) string {
	return strings.NewReplacer("%COUNT%", count, "%SCALING%", scaling, "%SHARD%", shard).Replace(scalingJob)
}

// TestScalingPolicy: the validator accepts the shipped form of policy and
// names each mistake that Nomad accepts but the autoscaler (or the fleet)
// would trip on later, and the bounds Nomad refuses.
func TestScalingPolicy(t *testing.T) {
	t.Parallel()
	shard := `        shard {
          rank           = 0
          count          = 2
          leader_address = "10.0.0.1:29500"
        }`
	tests := []struct {
		name, count, scaling, shard string
		want                        string // "" for valid; else a problem containing it
		warning                     bool
	}{
		{"shipped form", "2", scalingBlock, "", "", false},
		{"no scaling block", "2", "", "", "", false},
		{"other model's signal", "2", strings.Replace(scalingBlock, `model=\"m\"`, `model=\"other\"`, 1), "", `selects model "other", but the group serves "m"`, false},
		{"no model selector", "2", strings.Replace(scalingBlock, `{model=\"m\"}`, ``, 1), "", `without model="m"`, false},
		{"count over max", "5", scalingBlock, "", "count 5 outside the scaling bounds 1..4", false},
		{"count under min", "0", scalingBlock, "", "count 0 outside the scaling bounds 1..4", false},
		{"min over max", "2", strings.Replace(scalingBlock, "min     = 1", "min     = 6", 1), "", "scaling min 6: want 0 to max (4)", false},
		{"no max", "2", strings.Replace(scalingBlock, "max     = 4\n", "", 1), "", "without max", false},
		{"bad cooldown", "2", strings.Replace(scalingBlock, `"5m"`, `"soon"`, 1), "", `cooldown "soon": want a duration`, false},
		{"no check", "2", strings.Replace(scalingBlock, `check "r"`, `nocheck "r"`, 1), "", "without a check", false},
		{"no strategy", "2", strings.Replace(scalingBlock, `strategy "pass-through" {}`, ``, 1), "", "0 strategy blocks; want one", false},
		{"plugin strategy", "2", strings.Replace(scalingBlock, `"pass-through"`, `"my-plugin"`, 1), "", `strategy "my-plugin" is none of`, true},
		{"a shard of a multi-node replica", "1", strings.Replace(scalingBlock, "min     = 1\n      max     = 4", "min     = 1\n      max     = 2", 1), shard, "scaling block on a shard of a multi-node replica", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			problems := Validate("j.nomad.hcl", []byte(scalingSpec(tt.count, tt.scaling, tt.shard)))
			if tt.want == "" {
				if len(problems) > 0 {
					t.Fatalf("valid spec: %v", problems)
				}
				return
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Message, tt.want) || problems[0].Warning != tt.warning {
				t.Fatalf("problems %v; want one (warning %v) containing %q", problems, tt.warning, tt.want)
			}
		})
	}
}
