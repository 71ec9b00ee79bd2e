package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEngineTask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		task    string
		pooling bool
	}{
		{nil, "generate", false},
		{[]string{"--max-num-seqs", "8"}, "generate", false},
		{[]string{"--runner", "generate"}, "generate", false},
		{[]string{"--runner", "pooling"}, "", true},
		{[]string{"--runner=pooling", "--convert=classify"}, "classify", true},
		{[]string{"--convert", "embed"}, "embed", true},
		{[]string{"--convert_type", "embed"}, "generate", false}, // not vLLM's flag
	}
	for _, tt := range tests {
		task, pooling, _ := engineTask(tt.args)
		if task != tt.task || pooling != tt.pooling {
			t.Errorf("%q: %q pooling %v; want %q pooling %v", tt.args, task, pooling, tt.task, tt.pooling)
		}
	}
}

// TestPoolingJobspecValidates: a pooling engine whose service says its
// task passes; the broken variants are in testdata/task-meta-*.
func TestPoolingJobspecValidates(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/task-meta-convert-mismatch.nomad.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"embed", "classify"} {
		spec := strings.Replace(string(src), `llmgw-task       = "classify"`, `llmgw-task       = "`+task+`"`, 1)
		spec = strings.Replace(spec, `"--convert=embed"`, `"--convert=`+task+`"`, 1)
		path := filepath.Join(t.TempDir(), "pool.nomad.hcl")
		if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
		if problems, err := ValidateFile(path); err != nil || len(problems) != 0 {
			t.Errorf("%s: %v %v; want none", task, problems, err)
		}
	}
}
