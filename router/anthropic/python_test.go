package anthropic

import (
	"strings"
	"testing"
)

// Expected strings are what CPython 3 prints for json.loads(input):
// json.dumps(v) and str(v).
func TestPythonPrinters(t *testing.T) {
	tests := []struct{ in, dumps, repr string }{
		{`{"a": 1, "b": [true, false, null]}`, `{"a": 1, "b": [true, false, null]}`, `{'a': 1, 'b': [True, False, None]}`},
		{`[1.0, 2.50, 1e5, 1e16, 0.0001, 0.00001, -0.0, 123456789012345678]`,
			`[1.0, 2.5, 100000.0, 1e+16, 0.0001, 1e-05, -0.0, 123456789012345678]`,
			`[1.0, 2.5, 100000.0, 1e+16, 0.0001, 1e-05, -0.0, 123456789012345678]`},
		{`["it's", "say \"hi\"", "both ' \"", "tab\there\n"]`,
			`["it's", "say \"hi\"", "both ' \"", "tab\there\n"]`,
			`["it's", 'say "hi"', 'both \' "', 'tab\there\n']`},
		{`["é", "😀", "\u0001", "\u00a0"]`, `["\u00e9", "\ud83d\ude00", "\u0001", "\u00a0"]`, `['é', '😀', '\x01', '\xa0']`},
		{`1e400`, `Infinity`, `inf`},
	}
	for _, tc := range tests {
		v, err := decodeOrdered([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		var d, r strings.Builder
		pyDumps(&d, v)
		pyRepr(&r, v)
		if d.String() != tc.dumps {
			t.Errorf("json.dumps(%s) = %s, want %s", tc.in, d.String(), tc.dumps)
		}
		if r.String() != tc.repr {
			t.Errorf("str(%s) = %s, want %s", tc.in, r.String(), tc.repr)
		}
	}
}
