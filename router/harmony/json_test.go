package harmony

import "testing"

// TestDefaultValues pins how a non-string default is written: as
// serde_json's compact Display, floats in the ryu crate's shortest form
// (its pretty::format64 rules), object keys in the order sent.
func TestDefaultValues(t *testing.T) {
	tests := []struct{ in, want string }{
		{`20`, `20`},
		{`-3`, `-3`},
		{`18446744073709551615`, `18446744073709551615`},
		{`1.0`, `1.0`},
		{`1.50`, `1.5`},
		{`1e15`, `1000000000000000.0`},
		{`1e16`, `1e16`},
		{`1.5e300`, `1.5e300`},
		{`0.0001`, `0.0001`},
		{`1e-7`, `1e-7`},
		{`-0.0`, `-0.0`},
		{`true`, `true`},
		{`null`, `null`},
		{`[1, "a"]`, `[1,"a"]`},
		{`{"b": 1, "a": "x\"y\u00e9\n"}`, `{"b":1,"a":"x\"yé\n"}`},
		{`{"a": 1, "a": 2}`, `{"a":2}`},
	}
	for _, tt := range tests {
		n := parseJSON([]byte(tt.in))
		if n == nil {
			t.Fatalf("parseJSON(%s) failed", tt.in)
		}
		if got := n.String(); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `1 2`, `{"a":}`} {
		if parseJSON([]byte(bad)) != nil {
			t.Errorf("parseJSON(%q) succeeded", bad)
		}
	}
}
