// Package gptoss gives tests a gpt-oss model directory: the test data's
// gpt-oss tokenizer (from `make testdata`) beside a config.json naming the
// gpt_oss architecture, which is what makes vLLM, vllm-sim and the
// router render the model's chats in Harmony rather than with a chat
// template.
//
// It imports only the standard library; any package's tests may use it.
package gptoss

import (
	"os"
	"path/filepath"
	"testing"
)

// ModelDir returns a fresh directory holding links to the test data's
// gpt-oss tokenizer files and a gpt_oss config.json. Without the test
// data the test is skipped, or fails under CI, where `make test` fetches
// it first.
func ModelDir(t testing.TB) string {
	t.Helper()
	src := os.Getenv("LLMGW_TESTDATA")
	if src == "" {
		home, _ := os.UserHomeDir()
		src = filepath.Join(home, ".cache", "llmgw", "testdata")
	}
	src = filepath.Join(src, "models", "gptoss")
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is absent in CI: `make test` runs `make testdata` first", src)
		}
		t.Skipf("%s is absent: run `make testdata` (or set LLMGW_TESTDATA)", src)
	}
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	config := []byte(`{"architectures":["GptOssForCausalLM"],"model_type":"gpt_oss"}`)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
