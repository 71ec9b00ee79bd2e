package supervisor

import "testing"

func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Owner
		ok   bool
	}{
		{"12:345", Owner{Pid: 12, Start: 345}, true},
		{"1:0", Owner{Pid: 1}, true},
		{"", Owner{}, false},
		{"12", Owner{}, false},
		{"0:5", Owner{}, false},
		{"-3:5", Owner{}, false},
		{"12:-5", Owner{}, false},
		{"12:5:6", Owner{}, false},
		{"x:5", Owner{}, false},
	} {
		got, err := parseOwner(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseOwner(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseOwner: any input parses or fails with an error, and whatever
// parses prints back to the same owner.
func FuzzParseOwner(f *testing.F) {
	for _, s := range []string{"12:345", "1:0", "", ":", "12:", "99999999999999999999:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := parseOwner(s)
		if err != nil {
			return
		}
		back, err := parseOwner(o.String())
		if err != nil || back != o {
			t.Errorf("%q parsed to %+v, which prints as %q and parses to %+v, %v", s, o, o.String(), back, err)
		}
	})
}
