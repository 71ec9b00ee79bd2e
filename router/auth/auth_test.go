package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

const (
	keyA = "llmgw-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	keyB = "llmgw-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	keyC = "llmgw-cccccccccccccccccccccccccccccccc"
)

const secret = "0123456789abcdef0123456789abcdef"

func fileWith(tenants string) string {
	return `{"salt_secret": "` + secret + `", "tenants": [` + tenants + `]}`
}

func tenantJSON(name, key, extra string) string {
	return `{"name": "` + name + `", "keys_sha256": ["` + HashKey(key).String() + `"]` + extra + `}`
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	src := fileWith(tenantJSON("team-a", keyA, `, "models": ["m1"], "priority": 2, "weight": 3, "isolated": true,
		"limits": {"requests_per_second": 5, "tokens_per_minute": 6000, "max_concurrent": 7, "max_streams": 2}`) + `,` +
		tenantJSON("team-b", keyB, ``))
	tab, err := ParseFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, ok := tab.Lookup(keyA)
	if !ok {
		t.Fatal("keyA not found")
	}
	if a.Name != "team-a" || a.Priority != 2 || a.Weight != 3 || !a.Isolated || !a.Allows("m1") || a.Allows("m2") ||
		a.Limits.RequestsPerSecond != 5 || a.Limits.TokensPerMinute != 6000 || a.Limits.MaxConcurrent != 7 || a.Limits.MaxStreams != 2 {
		t.Errorf("team-a = %+v", a)
	}
	if a.CacheSalt != CacheSalt(secret, "team-a") || len(a.CacheSalt) != 64 {
		t.Errorf("team-a salt %q, want the HMAC of its name", a.CacheSalt)
	}
	b, ok := tab.Lookup(keyB)
	if !ok || b.Name != "team-b" || b.Weight != 1 || b.Isolated || b.CacheSalt != "" || !b.Allows("anything") {
		t.Errorf("team-b = %+v, %v", b, ok)
	}
	if _, ok := tab.Lookup(keyC); ok {
		t.Error("an unknown key resolved")
	}
	if _, ok := tab.Lookup(HashKey(keyA).String()); ok {
		t.Error("the hash itself worked as a key")
	}
	if tab.Keys() != 2 || len(tab.Tenants()) != 2 {
		t.Errorf("%d keys, %d tenants; want 2, 2", tab.Keys(), len(tab.Tenants()))
	}
}

func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	hA := HashKey(keyA).String()
	for _, tc := range []struct{ name, src, want string }{
		{"not json", `tenants = []`, "keys file: invalid character"},
		{"unknown field", `{"tenant": []}`, `unknown field "tenant"`},
		{"trailing", `{"tenants": []} {}`, "data after the JSON object"},
		{"bad name", fileWith(tenantJSON("team a", keyA, "")), `name "team a"`},
		{"dup name", fileWith(tenantJSON("t", keyA, "") + "," + tenantJSON("t", keyB, "")), "(t): the name is used twice"},
		{"no keys", fileWith(`{"name": "t"}`), "keys_sha256 is empty"},
		{"short hash", fileWith(`{"name": "t", "keys_sha256": ["abc"]}`), "keys_sha256[0]: want 64 hex digits"},
		{"not hex", fileWith(`{"name": "t", "keys_sha256": ["` + strings.Repeat("z", 64) + `"]}`), "keys_sha256[0]: not hex"},
		{"dup key", fileWith(`{"name": "t", "keys_sha256": ["` + hA + `", "` + hA + `"]}`), "keys_sha256[1]: this key already belongs"},
		{"negative rate", fileWith(tenantJSON("t", keyA, `, "limits": {"requests_per_second": -1}`)), "limits.requests_per_second -1"},
		{"negative tokens", fileWith(tenantJSON("t", keyA, `, "limits": {"tokens_per_minute": -1}`)), "limits.tokens_per_minute -1"},
		{"zero weight", fileWith(tenantJSON("t", keyA, `, "weight": 0`)), "weight 0"},
		{"priority", fileWith(tenantJSON("t", keyA, `, "priority": 5000`)), "priority 5000"},
		{"empty model", fileWith(tenantJSON("t", keyA, `, "models": [""]`)), "models[0] is empty"},
		{"isolated without secret", `{"tenants": [` + tenantJSON("t", keyA, `, "isolated": true`) + `]}`, "isolated needs the file's salt_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseFile([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), hA) {
				t.Errorf("error %q repeats a key hash", err)
			}
		})
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	s, err := Open(Options{Keys: []string{keyA, keyB}})
	if err != nil {
		t.Fatal(err)
	}
	a, ok := s.Authenticate(keyA)
	if !ok || a.Name != ListTenantName(HashKey(keyA)) || !strings.HasPrefix(a.Name, "key-") || len(a.Name) != 16 {
		t.Errorf("list key A: %+v %v", a, ok)
	}
	if b, _ := s.Authenticate(keyB); b == nil || b == a || b.Name == a.Name {
		t.Errorf("list keys share a tenant: %+v %+v", a, b)
	}
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"short"}, "api_keys[0]: key has 5 characters"},
		{[]string{keyA, keyA}, "api_keys[1]: the same key is listed twice"},
		{[]string{keyA + " x"}, "space, comma or control"},
		{[]string{strings.Repeat("k", 600)}, "at most 512"},
	} {
		if _, err := Open(Options{Keys: tc.keys}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%d keys): %v, want %q", len(tc.keys), err, tc.want)
		}
	}
	if (&Store{}).Enabled() || !s.Enabled() {
		t.Error("Enabled wrong")
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	write := func(src string) { t.Helper(); writeKeysFile(t, path, src) }
	write(fileWith(tenantJSON("team-a", keyA, "")))
	if _, err := Open(Options{File: filepath.Join(dir, "missing.json")}); err == nil {
		t.Error("a missing keys file opened")
	}
	s, err := Open(Options{File: path, Keys: []string{keyC}, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	held, _ := s.Authenticate(keyA) // a request in flight keeps this
	if _, ok := s.Authenticate(keyC); !ok {
		t.Error("the list key is not in the table beside the file")
	}

	stop := startRun(s, nil)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	// A change is picked up by the poll: key A moves to team-b, with limits.
	write(fileWith(tenantJSON("team-b", keyA, `, "limits": {"max_concurrent": 1}`)))
	poll.Until(t, "the poll to load the changed file", func() bool {
		ten, ok := s.Authenticate(keyA)
		return ok && ten.Name == "team-b"
	})
	if held.Name != "team-a" || held.Limits.MaxConcurrent != 0 {
		t.Errorf("the tenant a request held changed under it: %+v", held)
	}
	reloads := s.Reloads()

	// A bad file is rejected; the table in force stays.
	write(`{"tenants": [{"name": "x"`)
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "keys.json: keys file: unexpected EOF") {
		t.Errorf("bad file: %v", err)
	}
	if ten, ok := s.Authenticate(keyA); !ok || ten.Name != "team-b" || s.Reloads() != reloads {
		t.Errorf("after a bad file: %+v %v, reloads %d (was %d)", ten, ok, s.Reloads(), reloads)
	}
	// A file whose key clashes with the list is rejected as well.
	write(fileWith(tenantJSON("team-c", keyC, "")))
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "listed twice (or is also in the keys file)") {
		t.Errorf("clashing file: %v", err)
	}
	// Signalled reload (SIGHUP) of a fixed file.
	reload := make(chan struct{})
	stop()
	stopped = true
	s.opts.Poll = time.Hour
	defer startRun(s, reload)()
	write(fileWith(tenantJSON("team-d", keyB, "")))
	reload <- struct{}{}
	poll.Until(t, "the signalled reload", func() bool {
		_, ok := s.Authenticate(keyB)
		return ok
	})
	if _, ok := s.Authenticate(keyA); ok {
		t.Error("key A, dropped from the file, still resolves")
	}
}

// writeKeysFile replaces path with src as a Nomad template does: write
// aside, then rename over.
func writeKeysFile(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startRun runs s.Run until the stop it returns is called; stop waits for
// Run to return.
func startRun(s *Store, reload <-chan struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, reload) }()
	return func() { cancel(); <-done }
}

func TestNewKey(t *testing.T) {
	t.Parallel()
	a, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewKey()
	if a == b || !strings.HasPrefix(a, KeyPrefix) || len(a) != len(KeyPrefix)+64 || checkKey(a) != nil {
		t.Errorf("NewKey: %q, %q", a, b)
	}
}

// FuzzParseFile: any input parses or fails with an error, never panics,
// and a table it builds resolves each declared hash's tenant.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(fileWith(tenantJSON("team-a", keyA, `, "isolated": true, "limits": {"requests_per_second": 1.5}`))))
	f.Add([]byte(`{"tenants": [{"name": "t", "keys_sha256": ["` + HashKey(keyB).String() + `"], "weight": 1e300}]}`))
	f.Add([]byte(`{"tenants": null}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		tab, err := ParseFile(src)
		if err != nil {
			return
		}
		for _, es := range tab.byPrefix {
			for _, e := range es {
				if e.tenant == nil || e.tenant.Name == "" || (e.tenant.Isolated && e.tenant.CacheSalt == "") {
					t.Fatalf("bad entry %+v", e.tenant)
				}
			}
		}
	})
}
