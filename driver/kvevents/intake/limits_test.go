package intake

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestOversizedMessageDropped: a message over MaxMessageBytes is never
// applied; libzmq cuts the publisher off, which the listener counts, and
// the publisher's next batches, after it reconnects, are applied.
func TestOversizedMessageDropped(t *testing.T) {
	s := kvevents.NewStore()
	l := listen(t, ListenerConfig{}, s)
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	payloads, keys := chainPayloads(t, 2, 10)
	e.publish(payloads[0], false)
	poll.Until(t, "the first batch", func() bool { return l.Stats().LastSeq == 0 })

	e.publish(make([]byte, MaxMessageBytes+1), false)
	poll.Until(t, "the publisher cut off", func() bool { return l.Stats().Disconnects == 1 })
	e.awaitSubscriber() // the PUB socket reconnected and the subscription is back
	e.publish(payloads[1], false)
	poll.Until(t, "the batch after it", func() bool { return l.Stats().LastSeq == 2 })

	st := l.Stats()
	if st.Batches != 2 || st.Lost != 1 || st.Malformed != 0 || st.Disconnects != 1 {
		t.Errorf("stats %+v; want 2 batches, the oversized one lost, 1 disconnect", st)
	}
	if got, want := s.Blocks("r"), kvtest.GPU(0, keys...); !slices.Equal(got, kvtest.SortBlocks(want)) {
		t.Errorf("blocks %v; want %v", got, want)
	}
}

// TestMessageAtTheCapReachesDecoder: a message of exactly MaxMessageBytes is
// within the cap (libzmq refuses only larger ones): it reaches the decoder,
// which rejects this one as malformed, without a disconnect.
func TestMessageAtTheCapReachesDecoder(t *testing.T) {
	l := listen(t, ListenerConfig{}, kvevents.NewStore())
	e := startFakeEngine(t, l.Endpoint(), 0, true)
	big := make([]byte, MaxMessageBytes)
	big[0] = 0xc1 // never valid msgpack
	e.publish(big, false)
	poll.Until(t, "the message decoded", func() bool { return l.Stats().Malformed == 1 })
	if st := l.Stats(); st.Disconnects != 0 {
		t.Errorf("stats %+v; want no disconnect", st)
	}
}
