package scalebench

import (
	"slices"
	"testing"
)

// TestParseParts: a comma list of parts, each once, in the order given;
// an unknown part is an error.
func TestParseParts(t *testing.T) {
	cases := []struct {
		list    string
		want    []string
		wantErr bool
	}{
		{list: "snapshots", want: []string{"snapshots"}},
		{list: "discovery, peers,discovery", want: []string{"discovery", "peers"}},
		{list: "peers,decision", wantErr: true},
		{list: "", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseParts(c.list)
		if (err != nil) != c.wantErr || !slices.Equal(got, c.want) {
			t.Errorf("ParseParts(%q) = %q, %v; want %q, error %v", c.list, got, err, c.want, c.wantErr)
		}
	}
}

func TestPartNames(t *testing.T) {
	cases := map[string][]string{
		"Peer sharing":                     {"peers"},
		"Peer sharing and Nomad discovery": {"peers", "discovery"},
		"Peer sharing, snapshot apply (in results.json) and Nomad discovery": {"peers", "snapshots", "discovery"},
	}
	for want, parts := range cases {
		if got := partNames(parts); got != want {
			t.Errorf("partNames(%q) = %q; want %q", parts, got, want)
		}
	}
}
