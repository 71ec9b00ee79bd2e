package ingest

import (
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// TestUntrustedPublished: a replica whose driver says it cannot key its
// blocks (kvwire's Replica.Approx) is not synced, so it routes approx,
// and Untrusted gives the reason; an entry without a reason (a new
// engine) makes it exact again, and dropping it forgets the reason.
func TestUntrustedPublished(t *testing.T) {
	const why = "engine's KV events carry no extra_keys"
	s := NewSink(index.NewModels(index.Options{}), func(string) (string, bool) { return "m", true }, nil)
	update := func(seq uint64, snapshot, reset bool, approx string) func() {
		return func() {
			r := kvwire.Replica{ID: "a/1", BlockSize: 16, Reset: reset, Approx: approx}
			if approx == "" {
				r.Groups = []kvwire.Group{group(0, kvwire.TierGPU, []uint64{seq + 1})}
			}
			s.ApplyUpdate(&kvwire.Update{Driver: "d1", Epoch: 1, Seq: seq, Snapshot: snapshot, Replicas: []kvwire.Replica{r}})
		}
	}
	steps := []struct {
		name   string
		do     func()
		synced bool
		why    string
	}{
		{"snapshot, trusted", update(0, true, false, ""), true, ""},
		{"reset with a reason", update(1, false, true, why), false, why},
		{"snapshot repeating it", update(0, true, false, why), false, why},
		{"a new engine's reset", update(1, false, true, ""), true, ""},
		{"distrusted again", update(2, false, true, why), false, why},
		{"drop", func() { s.Drop("a/1") }, false, ""},
	}
	for _, st := range steps {
		st.do()
		got, untrusted := s.Untrusted("a/1")
		if s.Synced("a/1") != st.synced || got != st.why || untrusted != (st.why != "") {
			t.Errorf("%s: synced %v, untrusted %q (%v); want synced %v, untrusted %q", st.name, s.Synced("a/1"), got, untrusted, st.synced, st.why)
		}
	}
}
