package main

import (
	"os"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestExampleConfig keeps router.example.hcl format-clean, valid, and
// buildable into a scheduler.
func TestExampleConfig(t *testing.T) {
	src, err := os.ReadFile("router.example.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := hclwrite.Format(src); string(got) != string(src) {
		t.Errorf("router.example.hcl is not hclfmt-clean; formatted:\n%s", got)
	}
	c := config.Default()
	if err := c.LoadFile("router.example.hcl"); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Build(c.Scheduler, scheduler.Deps{Index: index.NewModels(index.Options{})}); err != nil {
		t.Errorf("scheduler section: %v", err)
	}
}
