package route

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/tenant"
)

// saltSecret is the keys file's salt secret the salted tenants' salts
// derive from.
const saltSecret = "0123456789abcdef0123456789abcdef"

// hmacHex is the salt an isolated tenant's request carries when its client
// sent one of its own, computed here apart from tenant.SaltFor.
func hmacHex(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// TestSaltKeysBlocks: the salted request's first block is keyed with the
// salt the engine gets, and only the first block's key changes, as vLLM
// keys it, so the router's exact lookup finds what the engine cached.
func TestSaltKeysBlocks(t *testing.T) {
	prompts, _ := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
	body := `{"model":"m","cache_salt":"c","messages":[{"role":"user","content":"` + strings.Repeat("many words here ", 40) + `"}]}`
	keys := func(ten *tenant.Tenant) ([]byte, []uint64) {
		req, err := openai.Parse(openai.Chat, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if es := forTenant(ten, req); es != nil {
			t.Fatal(es)
		}
		res, err := prompts.ComputeFor(req, prompt.Target{Model: "m", BlockSize: 16})
		if err != nil || len(res.Keys) < 2 {
			t.Fatalf("keys: %v (%d)", err, len(res.Keys))
		}
		// The engine would key with the salt it is sent: parse what goes out.
		out, err := openai.Parse(openai.Chat, req.Body)
		if err != nil || out.CacheSalt != req.CacheSalt {
			t.Fatalf("forwarded body's salt %q, keyed with %q (%v)", out.CacheSalt, req.CacheSalt, err)
		}
		ks := make([]uint64, len(res.Keys))
		for i, k := range res.Keys {
			ks[i] = uint64(k)
		}
		return req.Body, ks
	}
	_, plain := keys(&tenant.Tenant{Name: "open"})
	a := &tenant.Tenant{Name: "a", Isolated: true, CacheSalt: auth.CacheSalt(saltSecret, "a")}
	b := &tenant.Tenant{Name: "b", Isolated: true, CacheSalt: auth.CacheSalt(saltSecret, "b")}
	bodyA, ka := keys(a)
	_, ka2 := keys(a)
	_, kb := keys(b)
	if ka[0] == plain[0] || ka[0] == kb[0] {
		t.Errorf("block 0 keys: plain %x, a %x, b %x; want all different", plain[0], ka[0], kb[0])
	}
	if ka[0] != ka2[0] {
		t.Error("the same tenant keys the same prompt differently")
	}
	if !strings.Contains(string(bodyA), `"cache_salt":"`+hmacHex(a.CacheSalt, "c")+`"`) {
		t.Errorf("forwarded body %s", bodyA)
	}
}

func TestWithCacheSalt(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		spliced    bool
	}{
		{"plain", `{"model":"m","prompt":"hi"}`, true},
		{"trailing space", "{\"model\":\"m\",\"prompt\":\"hi\"} \n", true},
		{"empty object", `{ }`, true},
		{"client salt", `{"model":"m","cache_salt":"x","prompt":"hi"}`, false},
		{"other case", `{"model":"m","Cache_Salt":"x","prompt":"hi"}`, false},
		{"escaped key", `{"model":"m","cache\u005fsalt":"x","prompt":"hi"}`, false},
		{"word in a prompt", `{"model":"m","prompt":"what is a CACHE_SALT?"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := withCacheSalt([]byte(tc.body), "tenant-salt")
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if keys := saltKeys(t, out); m["cache_salt"] != "tenant-salt" || len(keys) != 1 {
				t.Errorf("%s -> %s: salt keys %v", tc.body, out, keys)
			}
			if spliced := strings.HasSuffix(string(out), `"cache_salt":"tenant-salt"}`) && !strings.Contains(string(out), `"cache_salt":"x"`); tc.spliced && !spliced {
				t.Errorf("%s was rewritten, not spliced: %s", tc.body, out)
			}
			if req, err := openai.Parse(openai.Completion, out); tc.body != `{ }` && (err != nil || req.CacheSalt != "tenant-salt" || req.Model != "m") {
				t.Errorf("router reads %s as %+v, %v", out, req, err)
			}
		})
	}
}

// saltKeys lists the top-level keys of the object body that a JSON
// reader, case-sensitive or not, could take for cache_salt, duplicates
// included, each with its value.
func saltKeys(t *testing.T, body []byte) []string {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(body)))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not an object", body)
	}
	var out []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if strings.EqualFold(k.(string), "cache_salt") {
			out = append(out, k.(string)+"="+string(v))
		}
	}
	return out
}

// FuzzWithCacheSalt: whatever object a client sends, the forwarded body is
// valid JSON with exactly one cache_salt key (in any case) holding the
// tenant's salt; a JSON null is refused, not salted (it once panicked).
func FuzzWithCacheSalt(f *testing.F) {
	f.Add(`{"model":"m","cache_salt":"x"}`)
	f.Add(`{"CACHE_SALT":1,"cache\u005Fsalt":null}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, body string) {
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &in) != nil {
			return // the gateway parses the request first
		}
		out, err := withCacheSalt([]byte(body), "s")
		if in == nil { // null: no object to salt
			if !errors.Is(err, openai.ErrBadRequest) {
				t.Fatalf("%q: err %v, want a bad request", body, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !json.Valid(out) {
			t.Fatalf("%q -> invalid %q", body, out)
		}
		if salts := saltKeys(t, out); len(salts) != 1 || salts[0] != `cache_salt="s"` {
			t.Fatalf("%q -> %q: salt keys %v", body, out, salts)
		}
	})
}
