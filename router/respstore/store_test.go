package respstore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func entry(tenant string, itemBytes int) Entry {
	return Entry{Tenant: tenant, Model: "m", Items: []json.RawMessage{json.RawMessage(`"` + strings.Repeat("x", itemBytes) + `"`)}, Response: json.RawMessage(`{}`)}
}

func TestStoreKeepsWithinItsBound(t *testing.T) {
	t.Parallel()
	e := entry("a", 1000)
	s := New(Options{MaxBytes: 3 * e.size(), MaxEntryBytes: 2000})
	for _, id := range []string{"1", "2", "3"} {
		if err := s.Put(id, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.Get("1", "a"); !ok { // 1 is now the most recently used
		t.Fatal("entry 1 missing before the store is full")
	}
	if err := s.Put("4", e); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Entries != 3 || st.Bytes > s.Options().MaxBytes || st.Evicted != 1 {
		t.Fatalf("stats %+v after a fourth entry in room for three", st)
	}
	if _, ok := s.Get("2", "a"); ok {
		t.Error("entry 2, the least recently used, was kept; 1 was read since")
	}
	for _, id := range []string{"1", "3", "4"} {
		if _, ok := s.Get(id, "a"); !ok {
			t.Errorf("entry %s was evicted", id)
		}
	}
}

func TestStoreRefusesAnOversizeEntry(t *testing.T) {
	t.Parallel()
	s := New(Options{MaxBytes: 1 << 20, MaxEntryBytes: 500})
	err := s.Put("1", entry("a", 1000))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Put of a 1000-byte entry with a 500-byte limit: %v, want ErrTooLarge", err)
	}
	if st := s.Stats(); st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("stats %+v after a refused Put", st)
	}
}

func TestStoreScopesEntriesToTheirTenant(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	if err := s.Put("1", entry("team-a", 10)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("1", "team-b"); ok {
		t.Error("team-b read team-a's response")
	}
	if s.Delete("1", "team-b") {
		t.Error("team-b deleted team-a's response")
	}
	if _, ok := s.Get("1", "team-a"); !ok {
		t.Fatal("team-a's response is gone after team-b's attempts")
	}
	if !s.Delete("1", "team-a") {
		t.Fatal("team-a could not delete its response")
	}
	if _, ok := s.Get("1", "team-a"); ok {
		t.Fatal("a deleted response is still there")
	}
}

func TestStoreExpiresAfterTheTTL(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	s := New(Options{TTL: time.Minute})
	s.now = func() time.Time { return now }
	for _, id := range []string{"old", "read"} {
		if err := s.Put(id, entry("a", 10)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(30 * time.Second)
	if err := s.Put("new", entry("a", 10)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(45 * time.Second) // old and read are 75 s old, new 45 s
	if _, ok := s.Get("read", "a"); ok {
		t.Error("Get returned an entry past its TTL")
	}
	s.Sweep()
	st := s.Stats()
	if st.Entries != 1 || st.Expired != 2 {
		t.Fatalf("stats %+v after the sweep, want only the new entry and 2 expired", st)
	}
	if _, ok := s.Get("new", "a"); !ok {
		t.Fatal("the entry within its TTL was dropped")
	}
}

func TestIDNamesItsHolder(t *testing.T) {
	t.Parallel()
	a, b := TagOf("10.0.0.1:4000"), TagOf("10.0.0.2:4000")
	if a == b {
		t.Fatal("two addresses share a tag")
	}
	id := NewID(a)
	if got, ok := HolderOf(id); !ok || got != a {
		t.Fatalf("HolderOf(%s) = %x, %v; want %x", id, got, ok, a)
	}
	if NewID(a) == id {
		t.Fatal("two ids from one holder are equal")
	}
	for _, bad := range []string{"", "resp_", "resp_abc", "chatcmpl-" + id[5:], strings.ToUpper(id), id + "0", id[:len(id)-1] + "g"} {
		if _, ok := HolderOf(bad); ok {
			t.Errorf("HolderOf(%q) accepted it", bad)
		}
	}
}
