package admission

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/tenant"
)

func TestBand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		priority int
		header   string
		want     int
		err      string
	}{
		{"no header: the tenant's band", 3, "", 3, ""},
		{"lowered", 3, "1", 1, ""},
		{"lowered below zero", 0, "-2", -2, ""},
		{"never raised", 3, "9", 3, ""},
		{"clamped low", 0, "-1000", MinPriority, ""},
		{"tenant above the range", 50, "", MaxPriority, ""},
		{"space", 0, " 1", 0, "want an integer"},
		{"not a number", 0, "high", 0, "X-Llmgw-Priority"},
		{"long junk is cut", 0, strings.Repeat("x", 100), 0, strings.Repeat("x", 32) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePriority(tt.header)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || len(err.Error()) > 300 {
					t.Fatalf("ParsePriority(%q): %v; want an error naming %q", tt.header, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := Band(&tenant.Tenant{Name: "t", Priority: tt.priority}, p); got != tt.want {
				t.Errorf("band %d; want %d", got, tt.want)
			}
		})
	}
}

// FuzzParsePriority: any header value either parses to a band within the
// range and at most the tenant's priority, or is refused with a short
// error.
func FuzzParsePriority(f *testing.F) {
	for _, s := range []string{"", "0", "-3", "99999999999999999999", "+1", "0x10", "1e3"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, v string, prio int) {
		p, err := ParsePriority(v)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		b := Band(&tenant.Tenant{Priority: prio}, p)
		if b < MinPriority || b > MaxPriority || b > max(prio, MinPriority) {
			t.Fatalf("band %d for header %q and priority %d", b, v, prio)
		}
	})
}
