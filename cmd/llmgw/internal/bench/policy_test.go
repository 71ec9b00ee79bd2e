package bench

import (
	"testing"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestPoliciesBuild: every policy's scheduler block is one the router's
// strict config loader accepts and its registry builds, so a comparison
// never dies on a typo after starting the fleet.
func TestPoliciesBuild(t *testing.T) {
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	for _, p := range Policies() {
		t.Run(p.Name, func(t *testing.T) {
			c := config.Default()
			if p.Scheduler != "" {
				if err := c.ParseHCL([]byte("scheduler {\n"+p.Scheduler+"}\n"), p.Name+".hcl"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := reg.Build(c.Scheduler, scheduler.Deps{Index: index.NewModels(index.Options{})}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := SelectPolicies("round-robin,nope"); err == nil {
		t.Error("an unknown policy name was accepted")
	}
}
