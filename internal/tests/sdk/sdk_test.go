package sdk_test

import (
	"strings"
	"testing"
)

// TestSDKs starts the fleet once and runs every SDK against it: OpenAI's
// Go client, then each Node script with the checks whose endpoints exist.
func TestSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, vllm-sim and llmgw-router processes")
	}
	f := startFleet(t)
	have := probe(t, f)
	// Every endpoint is served now: one that goes missing fails the test
	// (its checks skip, naming it, so the failure says what is gone).
	for e, why := range have {
		if why != "" {
			t.Errorf("%s: %s", e, why)
		}
	}
	t.Run("openai-go", func(t *testing.T) { testOpenAIGo(t, f, have) })
	t.Run("node", func(t *testing.T) { testNode(t, f, have) })
}

// missingOf says why any of needs is missing, or "".
func (s served) missingOf(needs []endpoint) string {
	var why []string
	for _, e := range needs {
		if w := s[e]; w != "" {
			why = append(why, w)
		}
	}
	return strings.Join(why, "; ")
}

// testNode runs each script once, with its checks whose endpoints are
// served, and asserts each check's detail in a subtest of its own.
func testNode(t *testing.T, f *fleet, have served) {
	dir := stageScripts(t, sdkNode(t))
	var scripts []string
	byScript := map[string][]check{}
	for _, c := range nodeChecks {
		if _, ok := byScript[c.script]; !ok {
			scripts = append(scripts, c.script)
		}
		byScript[c.script] = append(byScript[c.script], c)
	}
	for _, script := range scripts {
		var runnable []string
		for _, c := range byScript[script] {
			if have.missingOf(c.needs) == "" {
				runnable = append(runnable, c.name)
			}
		}
		var run scriptRun
		if len(runnable) > 0 {
			run = runScript(t, dir, script, f, runnable)
		}
		for _, c := range byScript[script] {
			t.Run(strings.TrimSuffix(script, ".mjs")+"/"+c.name, func(t *testing.T) {
				if why := have.missingOf(c.needs); why != "" {
					t.Skip(why)
				}
				r, ok := run.results[c.name]
				switch {
				case !ok:
					t.Fatalf("%s printed no line for %s (exit: %v); stderr:\n%s", script, c.name, run.err, run.stderr)
				case !r.OK:
					t.Fatalf("%s %s failed: %s\nstderr:\n%s", script, c.name, r.Detail, run.stderr)
				}
				t.Logf("%s", r.Detail)
				c.assert(t, r.Detail)
			})
		}
	}
}
