package bench

import (
	"slices"
	"testing"
)

// TestPDRoles: the disaggregated policy runs on as many shards as the
// others, half prefill (one at least) and the rest decode.
func TestPDRoles(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []string
	}{
		{2, []string{"prefill", "decode"}},
		{3, []string{"prefill", "decode", "decode"}},
		{4, []string{"prefill", "prefill", "decode", "decode"}},
	} {
		if got := pdRoles(c.n); !slices.Equal(got, c.want) {
			t.Errorf("pdRoles(%d) = %v; want %v", c.n, got, c.want)
		}
	}
	ps, err := SelectPolicies("precise-prefix," + pdPolicy)
	if err != nil || len(ps) != 2 || ps[0].disaggregated() || !ps[1].disaggregated() || ps[1].Scheduler != "" {
		t.Errorf("policies %+v, %v; want precise-prefix, then the disaggregated policy on the default scheduler", ps, err)
	}
}
