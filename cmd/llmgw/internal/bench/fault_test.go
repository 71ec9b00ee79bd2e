package bench

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// TestSurvival: only streams that had started on the killed replica and
// were still running when it died count, and of those the completed ones
// survived.
func TestSurvival(t *testing.T) {
	s := time.Second
	ok := func(replica string, sent, e2e time.Duration) client.Result {
		return client.Result{Status: http.StatusOK, Started: true, Replica: replica, Sent: sent, E2E: e2e}
	}
	broken := ok("a", 1*s, 2*s)
	broken.Err = "error in stream: replica a failed mid-stream"
	results := []client.Result{
		ok("a", 1*s, 9*s),     // in flight at 5 s, completed: survived
		broken,                // in flight, failed
		ok("a", 1*s, 2*s),     // ended before the kill
		ok("a", 6*s, 2*s),     // sent after the kill
		ok("b", 1*s, 9*s),     // another replica
		{Status: 0, Err: "x"}, // never answered
	}
	got := survival("v", "a", 5*s, results)
	if got.Requests != 6 || got.OK != 4 || got.Hit != 2 || got.Survived != 1 {
		t.Errorf("survival %+v; want 6 requests, 4 completed, 2 hit, 1 survived", got)
	}
	md := SurvivalMarkdown([]Survival{got, {Variant: "none"}})
	if !strings.Contains(md, "| v | 6 | 4 | 2 | 1 (50 %) | 5.0 s |") || !strings.Contains(md, "| none | 0 | 0 | 0 | - |") {
		t.Errorf("table:\n%s", md)
	}
}
