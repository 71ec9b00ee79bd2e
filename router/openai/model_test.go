package openai

import (
	"errors"
	"strings"
	"testing"
)

func TestModelOf(t *testing.T) {
	for _, tc := range []struct {
		body, want, err string
	}{
		{`{"model":"m","prompt":"hi"}`, "m", ""},
		{` {"tokens":[1,2,3]} `, "", ""},
		{`{"model":null}`, "", ""},
		{`{"model":7}`, "", "model must be a string"},
		{`[1,2]`, "", "must be a JSON object"},
		{``, "", "must be a JSON object"},
		{`{"model":"m"`, "", "malformed JSON"},
	} {
		got, err := ModelOf([]byte(tc.body))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ModelOf(%s) = %q, %v; want %q", tc.body, got, err, tc.want)
		case tc.err != "" && (err == nil || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ModelOf(%s) error %v; want one naming %q", tc.body, err, tc.err)
		}
	}
}

// FuzzModelOf: any body gets a model or an error wrapping ErrBadRequest,
// never a panic.
func FuzzModelOf(f *testing.F) {
	for _, s := range []string{`{"model":"m"}`, `{"model":1}`, `{}`, `[`, `{"model":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := ModelOf(body); err != nil && !errors.Is(err, ErrBadRequest) {
			t.Fatalf("ModelOf(%q): %v does not wrap ErrBadRequest", body, err)
		}
	})
}
