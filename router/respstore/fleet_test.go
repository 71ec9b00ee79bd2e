package respstore

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// twoRouters returns two fleets that reach each other over real HTTP, as
// two routers' ingest listeners do.
func twoRouters(t *testing.T, token string) (a, b *Fleet) {
	t.Helper()
	fleets := map[Tag]string{}
	mk := func() *Fleet {
		f := &Fleet{Local: New(Options{}), Client: http.DefaultClient, Token: token}
		mux := http.NewServeMux()
		mux.Handle(PeerPath, f.Handler())
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		tag := TagOf(strings.TrimPrefix(srv.URL, "http://"))
		fleets[tag] = srv.URL
		f.Self = func() Tag { return tag }
		f.Holder = func(t Tag) (string, bool) { u, ok := fleets[t]; return u, ok }
		return f
	}
	return mk(), mk()
}

func TestFleetReadsAndDeletesAPeersResponse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoRouters(t, "secret")
	id := a.NewID()
	if err := a.Save(id, entry("team-a", 100)); err != nil {
		t.Fatal(err)
	}
	got, err := b.Load(ctx, id, "team-a")
	if err != nil {
		t.Fatalf("b could not load a's response: %v", err)
	}
	if got.Tenant != "team-a" || len(got.Items) != 1 || len(got.Items[0]) != 102 {
		t.Fatalf("b loaded %+v", got)
	}
	if _, err := b.Load(ctx, id, "team-b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("team-b loading team-a's response through b: %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, id, "team-b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("team-b deleting team-a's response through b: %v, want ErrNotFound", err)
	}
	if err := b.Delete(ctx, id, "team-a"); err != nil {
		t.Fatalf("b deleting a's response: %v", err)
	}
	if _, ok := a.Local.Get(id, "team-a"); ok {
		t.Fatal("a still holds the response b deleted")
	}
	if _, err := b.Load(ctx, id, "team-a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("loading a deleted response: %v, want ErrNotFound", err)
	}
}

func TestFleetWithoutTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoRouters(t, "secret")
	gone := NewID(TagOf("10.9.9.9:1"))
	if _, err := b.Load(ctx, gone, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("an id whose holder is not listed: %v, want ErrNotFound", err)
	}
	if _, err := b.Load(ctx, "resp_not-ours", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("an id no router made: %v, want ErrNotFound", err)
	}
	// A listed holder that does not answer is not the same as a missing
	// response: the client may retry.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	b.Holder = func(Tag) (string, bool) { return "http://" + dead, true }
	if _, err := b.Load(ctx, a.NewID(), ""); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a holder that does not answer: %v, want ErrUnreachable", err)
	}
}

func TestFleetHandlerChecksTheToken(t *testing.T) {
	t.Parallel()
	a, _ := twoRouters(t, "secret")
	id := a.NewID()
	if err := a.Save(id, entry("", 10)); err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"", "Bearer wrong", "secret"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, PeerPath+id, nil)
		req.Header.Set("Authorization", auth)
		a.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", auth, rec.Code)
		}
	}
}
