package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedJobspecsValidate runs the validator over every jobspec in this
// folder: what operators are told to `nomad job run` must pass it.
func TestShippedJobspecsValidate(t *testing.T) {
	t.Parallel()
	for _, f := range shipped(t) {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			problems, err := ValidateFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("%s", p)
			}
		})
	}
}

// TestBrokenJobspecs feeds jobspecs with one mistake each and expects that
// mistake, at its file:line:col, and nothing else.
func TestBrokenJobspecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string // each problem: its "file:line:col: " prefix plus a part of the message
	}{
		{"unknown-field", []string{`:14:9: task "vllm": Unsupported argument: An argument named "gpus"`}},
		{"wrong-type", []string{`:14:22: task "vllm": Incorrect attribute value type: Inappropriate value for attribute "block_size": a number is required`}},
		{"missing-model", []string{`:11:14: task "vllm": Missing required argument: The argument "model" is required`}},
		{"unknown-port", []string{`:14:9: task "vllm": port: no port labelled "api"`}},
		{"bad-block-size", []string{`:14:9: task "vllm": block_size: 8192 is not within 1..4096`}},
		{"args-port", []string{`:14:9: task "vllm": args[0]: --port: the driver serves the API on the port Nomad allocated to label "http", which the service advertises; set port in the task config instead`}},
		{"args-block-size", []string{`:14:9: task "vllm": args[1]: --block-size: the driver passes block_size (16)`}},
		{"args-served-model-name", []string{`:14:9: task "vllm": args[0]: --served-model-name (as --served_model_name): the driver serves the model as served_model_name`}},
		{"args-kv-events-config", []string{`:14:9: task "vllm": args[0]: --kv-events-config (as --kv-events-config.endpoint): kv_events is set`}},
		{"args-trust-remote-code", []string{`:14:9: task "vllm": args[2]: --trust-remote-code is refused: it runs the Python code that comes with a hub model; the plugin config's allowed_code_args must name it (refused under the driver's default plugin config)`}},
		{"code-env", []string{
			`:14:9: task "vllm": env: PYTHONPATH is refused`,
			`:35:7: task "vllm": task env: LD_PRELOAD is refused: the dynamic loader`,
		}},
		{"user-root", []string{`:10:7: task "vllm": user "root": denied_users denies root (refused under the driver's default plugin config)`}},
		{"kv-events-worker", []string{`:9:9: task "vllm": kv_events: shard rank 1 is not the leader`}},
		{"api-key-no-template", []string{`:13:9: task "vllm": api_key_env: no template block with env = true sets VLLM_API_KEY`}},
		{"missing-tag", []string{`:19:9: task "vllm": service "vllm": tags must include "llmgw"`}},
		{"missing-meta", []string{`:20:9: task "vllm": service "vllm": meta llmgw-replica is missing`}},
		{"meta-mismatch", []string{`:23:11: task "vllm": service "vllm": meta llmgw-block-size is "32"; want "16"`}},
		{"role-meta-mismatch", []string{`:26:11: task "vllm": service "vllm": meta llmgw-role is "prefill"; want "decode"`}},
		{"role-meta-agg", []string{`:24:11: task "vllm": service "vllm": meta llmgw-role is "decode" but the task's role is agg`}},
		{"nomad-tag-meta", []string{`:21:9: task "vllm": service "vllm": meta llmgw-block-size is "32"; want "16"`}},
		{"task-meta-no-runner", []string{`:24:11: task "vllm": service "vllm": meta llmgw-task is "embed" but the engine args (no --runner pooling or --convert) make a generate engine`}},
		{"task-meta-absent-pooling", []string{`:20:9: task "vllm": service "vllm": meta llmgw-task is "generate" (absent means generate) but the engine args --runner pooling make a pooling engine`}},
		{"task-meta-convert-mismatch", []string{`:25:11: task "vllm": service "vllm": meta llmgw-task is "classify" but the engine args --convert embed serve "embed"`}},
		{"model-meta-mismatch", []string{
			`:28:11: task "vllm": service "vllm": meta llmgw-root is "org/m-8b"; want "org/m-7b", the model the engine loads`,
			`:29:11: task "vllm": service "vllm": meta llmgw-max-model-len is "8192"; want 4096, the task's max_model_len`,
			`:30:11: task "vllm": service "vllm": meta llmgw-data-parallel-size is "4"; want 2, the task's data_parallel_size`,
		}},
		{"slash-name", []string{`:17:9: task "vllm": service "vllm/llama": Consul rejects "/"`}},
		{"no-check", []string{`:16:7: task "vllm": service "vllm": needs an HTTP check on /health`}},
		{"group-service", []string{
			`:8:5: service on vllm port "http" is declared at group level`,
			`:14:5: task "vllm": no service block`,
		}},
		{"no-shutdown-delay", []string{
			`:9:5: task "vllm": defines a service but no shutdown_delay`,
			`:38:22: shutdown_delay "0s": want a duration above zero`,
			`:44:5: group "router": defines a service, but neither the group nor a task has a shutdown_delay`,
		}},
		{"var-unreadable", []string{
			`:8:23: warning: task "router": template reads Nomad variable "nomad/jobs/gw/keys", which the task's workload identity cannot read under Nomad ACLs (it may read nomad/jobs/gw, nomad/jobs/gw/router, nomad/jobs/gw/router/router)`,
			`:8:23: warning: task "router": template reads Nomad variable "nomad/jobs/other"`,
		}},
		{"no-config", []string{`:4:5: task "vllm": driver vllm needs a config block`}},
		{"no-job", []string{`:1:1: no job block`}},
		{"syntax", []string{`:3:18: Unclosed configuration block`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tt.file+".nomad.hcl")
			problems, err := ValidateFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tt.want) {
				t.Fatalf("got %d problems %v; want %d", len(problems), problems, len(tt.want))
			}
			for i, p := range problems {
				if got := p.String(); !strings.HasPrefix(got, path+tt.want[i][:strings.Index(tt.want[i], " ")+1]) || !strings.Contains(got, tt.want[i]) {
					t.Errorf("problem %d: got %q; want %q", i, got, path+tt.want[i])
				}
			}
		})
	}
}

// TestBrokenJobspecsCovered keeps every broken jobspec in the table above.
func TestBrokenJobspecsCovered(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.nomad.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if problems, _ := ValidateFile(f); len(problems) == 0 {
			t.Errorf("%s validates; every jobspec in testdata/ is broken on purpose", f)
		}
	}
}

func TestValidateFileMissing(t *testing.T) {
	t.Parallel()
	if _, err := ValidateFile(filepath.Join(t.TempDir(), "absent.nomad.hcl")); !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("got %v; want a not-exist error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
