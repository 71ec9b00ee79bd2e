package migrate

import (
	"encoding/json"
	"reflect"
	"testing"
)

// without removes keys from every object in v, as dropKeys must.
func without(v any, keys ...string) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(x, k)
		}
		for k, e := range x {
			x[k] = without(e, keys...)
		}
	case []any:
		for i, e := range x {
			x[i] = without(e, keys...)
		}
	}
	return v
}

func checkDrop(t *testing.T, in string) {
	t.Helper()
	var want any
	if json.Unmarshal([]byte(in), &want) != nil {
		return // dropKeys is only given valid JSON
	}
	want = without(want, "token_ids", "prompt_token_ids")
	out := dropKeys([]byte(in), "token_ids", "prompt_token_ids")
	var got any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("dropKeys(%s) = %s: not JSON: %v", in, out, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dropKeys(%s) = %s; want %v", in, out, want)
	}
}

func TestDropKeys(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"choices":[{"index":0,"text":"a","token_ids":[1],"prompt_token_ids":[2,3]}],"id":"x"}`,
		`{"token_ids":[1]}`,
		`{"a":1, "token_ids" : [1] , "b":{"token_ids":null,"c":"token_ids"}}`,
		`{"text":"\"token_ids\":[1]","token_ids":[]}`,
		`{"a":[{"prompt_token_ids":{"x":[1,"]"]}},{"token_ids":"}"}]}`,
		`{"a":true,"token_ids":-1.5e3}`,
	} {
		checkDrop(t, in)
	}
}

// FuzzDropKeys: for any JSON, dropKeys equals decoding, deleting the keys
// everywhere and re-encoding.
func FuzzDropKeys(f *testing.F) {
	f.Add(`{"choices":[{"text":"a","token_ids":[1],"prompt_token_ids":[2]}]}`)
	f.Add(`{"a":1, "token_ids" : [1] , "b":{"token_ids":null}}`)
	f.Add(`[{"token_ids":"\\\""}]`)
	f.Fuzz(func(t *testing.T, in string) { checkDrop(t, in) })
}
