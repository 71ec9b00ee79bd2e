package enginetok

import (
	"slices"
	"strings"
	"testing"
)

func TestParseResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		max        int
		want       []uint32
		err        string
	}{
		{"vLLM's answer", `{"count":3,"max_model_len":8192,"tokens":[1,256,4294967295],"token_strs":null}`, 0, []uint32{1, 256, 4294967295}, ""},
		{"empty prompt", `{"count":0,"max_model_len":8,"tokens":[]}`, 0, []uint32{}, ""},
		{"no count", `{"tokens":[5]}`, 0, []uint32{5}, ""},
		{"no tokens", `{"count":0,"max_model_len":8}`, 0, nil, "no tokens field"},
		{"null tokens", `{"count":0,"tokens":null}`, 0, nil, "no tokens field"},
		{"count mismatch", `{"count":1,"tokens":[1,2]}`, 0, nil, "count 1 but 2 tokens"},
		{"id over uint32", `{"count":1,"tokens":[4294967296]}`, 0, nil, "token 0 is 4294967296"},
		{"negative id", `{"count":1,"tokens":[-1]}`, 0, nil, "tokenize response"},
		{"fractional id", `{"count":1,"tokens":[1.5]}`, 0, nil, "tokenize response"},
		{"too many", `{"count":3,"tokens":[1,2,3]}`, 2, nil, "3 tokens, more than the 2 allowed"},
		{"an error body", `{"error":{"message":"nope"}}`, 0, nil, "no tokens field"},
		{"not JSON", `nope`, 0, nil, "tokenize response: invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseResponse([]byte(tc.body), tc.max)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseResponse: any body gives ids or an error, never a panic, and
// ids always agree with the body's count.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(`{"count":3,"max_model_len":8192,"tokens":[1,256,70000]}`), 0)
	f.Add([]byte(`{"count":0,"tokens":[]}`), 1)
	f.Add([]byte(`{"tokens":[4294967296]}`), 0)
	f.Add([]byte(`{"count":2,"tokens":[1,2,3]}`), 2)
	f.Fuzz(func(t *testing.T, body []byte, max int) {
		ids, err := ParseResponse(body, max)
		if err != nil {
			if ids != nil {
				t.Fatalf("error %v with ids %v", err, ids)
			}
			return
		}
		if max > 0 && len(ids) > max {
			t.Fatalf("%d ids over the limit %d", len(ids), max)
		}
	})
}
