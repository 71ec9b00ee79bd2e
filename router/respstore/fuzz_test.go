package respstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// FuzzHolderOf: any client-sent id is either refused or names a tag that
// makes the same id's prefix.
func FuzzHolderOf(f *testing.F) {
	f.Add(NewID(TagOf("127.0.0.1:1")))
	f.Add("resp_0123")
	f.Add("")
	f.Fuzz(func(t *testing.T, id string) {
		tag, ok := HolderOf(id)
		if !ok {
			return
		}
		if len(id) != idLen || NewID(tag)[:len(IDPrefix)+2*tagBytes] != id[:len(IDPrefix)+2*tagBytes] {
			t.Fatalf("HolderOf(%q) = %x, which does not make its prefix", id, tag)
		}
	})
}

// FuzzPeerAnswer: whatever a peer answers, Load returns an entry of the
// asking tenant or an error, never a panic.
func FuzzPeerAnswer(f *testing.F) {
	f.Add(200, []byte(`{"tenant":"a","model":"m","items":[{"type":"message"}],"response":{}}`))
	f.Add(200, []byte(`{"tenant":"b"}`))
	f.Add(200, []byte(`{"items":[1,2`))
	f.Add(500, []byte(`oops`))
	// One peer for every input (a fuzz worker runs them one at a time):
	// the answer to send is set before each Load.
	var mu sync.Mutex
	var status int
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		st, b := status, body
		mu.Unlock()
		w.WriteHeader(st)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	fl := &Fleet{Local: New(Options{}), Client: srv.Client(), Token: "t",
		Self: func() Tag { return TagOf("self") }, Holder: func(Tag) (string, bool) { return srv.URL, true }}
	f.Fuzz(func(t *testing.T, st int, b []byte) {
		if st < 200 || st > 599 {
			return
		}
		mu.Lock()
		status, body = st, b
		mu.Unlock()
		e, err := fl.Load(context.Background(), NewID(TagOf("peer")), "a")
		if err == nil && e.Tenant != "a" {
			t.Fatalf("Load returned tenant %q's entry to tenant a", e.Tenant)
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Load: unexpected error kind %v", err)
		}
	})
}
