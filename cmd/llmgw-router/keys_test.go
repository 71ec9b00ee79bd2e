package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/auth"
)

func TestKeyTool(t *testing.T) {
	var out strings.Builder
	if err := keyTool(false, strings.NewReader("llmgw-some-key-0123456789\n"), &out); err != nil {
		t.Fatal(err)
	}
	// sha256sum of the key without its newline, as the keys file wants it.
	if got, want := out.String(), auth.HashKey("llmgw-some-key-0123456789").String()+"\n"; got != want {
		t.Errorf("-hash-key printed %q, want %q", got, want)
	}
	if err := keyTool(false, strings.NewReader(""), &out); err == nil {
		t.Error("-hash-key with nothing on stdin: no error")
	}
	out.Reset()
	if err := keyTool(true, nil, &out); err != nil {
		t.Fatal(err)
	}
	var key, hash string
	if _, err := fmt.Sscanf(out.String(), "key: %s\nsha256: %s\n", &key, &hash); err != nil || auth.HashKey(key).String() != hash || !strings.HasPrefix(key, auth.KeyPrefix) {
		t.Errorf("-new-key printed %q (%v)", out.String(), err)
	}
}

// TestSIGHUPReloadsKeys runs the router with a keys file polled only
// hourly: a changed file takes effect on SIGHUP, a broken one is refused
// with the old keys kept, and the process stays up throughout.
func TestSIGHUPReloadsKeys(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	keyA, keyB := "llmgw-key-a-0123456789abcdef", "llmgw-key-b-0123456789abcdef"
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(keys+".tmp", []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(keys+".tmp", keys); err != nil {
			t.Fatal(err)
		}
	}
	file := func(key string) string {
		return `{"tenants": [{"name": "t", "keys_sha256": ["` + auth.HashKey(key).String() + `"]}]}`
	}
	write(file(keyA))
	conf := filepath.Join(dir, "router.hcl")
	if err := os.WriteFile(conf, []byte("auth {\n  keys_file = \""+keys+"\"\n  reload_interval = \"1h\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, sc := runMain(t, "-config "+conf+" -listen 127.0.0.1:0 -ingest-listen 127.0.0.1:0")
	started := regexp.MustCompile(`llmgw-router started: api=(\S+)`)
	var api string
	var log strings.Builder
	for api == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := started.FindStringSubmatch(sc.Text()); m != nil {
			api = m[1]
		}
	}
	if api == "" {
		t.Fatalf("no start line:\n%s", log.String())
	}
	var mu sync.Mutex
	go func() {
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	logged := func(s string) string {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, s) {
				return l
			}
		}
		return ""
	}
	status := func(key string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := status(keyA), status(keyB); a != 200 || b != 401 {
		t.Fatalf("before the reload: key A %d, key B %d; want 200, 401", a, b)
	}
	write(file(keyB))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "SIGHUP to load key B", func() bool { return status(keyB) == 200 })
	if a := status(keyA); a != 401 {
		t.Errorf("key A, removed, answers %d", a)
	}
	write(`{"tenants": [{"name": "t", "keys_sha256": ["nothex"]}]}`)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the broken file to be rejected", func() bool { return logged("keys file rejected") != "" })
	if l := logged("keys file rejected"); !strings.Contains(l, "keys_sha256[0]") || strings.Contains(l, keyB) {
		t.Errorf("rejection log line %q: want the field named, never a key", l)
	}
	if b := status(keyB); b != 200 {
		t.Errorf("after a broken file: key B %d; want the old keys kept", b)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestReadmeKeysFile keeps the keys file example in README.md loadable.
func TestReadmeKeysFile(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no keys file example in a json block")
	}
	tab, err := auth.ParseFile([]byte(example))
	if err != nil {
		t.Fatalf("the README's keys file example: %v", err)
	}
	if len(tab.Tenants()) != 2 || tab.Keys() != 3 {
		t.Errorf("example has %d tenants, %d keys; want 2, 3", len(tab.Tenants()), tab.Keys())
	}
}
