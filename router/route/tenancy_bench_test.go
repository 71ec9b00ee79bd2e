package route

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/tenant"
)

// BenchmarkTenantCheck measures the planner's part of tenancy on one
// request: the model check and, for an isolated tenant, the cache_salt
// rewrite of a 4 KiB body. With router/gateway's BenchmarkTenancy (keys,
// limits, admission, headers and usage) it is all that API keys add to a
// routed request.
func BenchmarkTenantCheck(b *testing.B) {
	body := []byte(`{"model":"m","max_tokens":64,"prompt":"` + strings.Repeat("a prompt of some length ", 170) + `"}`)
	parsed, err := openai.Parse(openai.Completion, body)
	if err != nil {
		b.Fatal(err)
	}
	for _, isolated := range []bool{false, true} {
		name := "model"
		if isolated {
			name = "model+isolation"
		}
		ten := &tenant.Tenant{Name: "t0", Isolated: isolated, CacheSalt: auth.CacheSalt(saltSecret, "t0")}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := *parsed // forTenant may rewrite the body
				if e := forTenant(ten, &req); e != nil {
					b.Fatal(e.Message)
				}
				if isolated && req.CacheSalt == "" {
					b.Fatal("an isolated tenant's request was not salted")
				}
			}
		})
	}
}
