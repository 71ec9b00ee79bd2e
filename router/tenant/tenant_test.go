package tenant

import (
	"context"
	"strings"
	"testing"
)

func TestAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		models []string
		model  string
		want   bool
	}{
		{nil, "any", true},
		{[]string{"a", "b"}, "b", true},
		{[]string{"a", "b"}, "c", false},
	} {
		if got := (&Tenant{Models: tc.models}).Allows(tc.model); got != tc.want {
			t.Errorf("Models %v Allows(%q) = %v, want %v", tc.models, tc.model, got, tc.want)
		}
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	if got := FromContext(context.Background()); got != Anonymous {
		t.Errorf("empty context: got %+v, want Anonymous", got)
	}
	ten := &Tenant{Name: "team-a"}
	if got := FromContext(NewContext(context.Background(), ten)); got != ten {
		t.Errorf("got %+v, want %+v", got, ten)
	}
	if w := (&Tenant{}).ShareWeight(); w != 1 {
		t.Errorf("zero weight reads as %v, want 1", w)
	}
}

func TestSaltFor(t *testing.T) {
	t.Parallel()
	ten := &Tenant{CacheSalt: "tenant-salt"}
	if got := ten.SaltFor(""); got != "tenant-salt" {
		t.Errorf("no client salt: %q, want the tenant's", got)
	}
	a, b := ten.SaltFor("mine"), ten.SaltFor(strings.Repeat("x", 4096))
	if a == b || a == ten.CacheSalt || len(a) != 64 || len(b) != 64 {
		t.Errorf("client salts %q and %q: want two distinct 64-digit salts", a, b)
	}
	if other := (&Tenant{CacheSalt: "other-salt"}).SaltFor("mine"); other == a {
		t.Errorf("two tenants with the same client salt share %q", a)
	}
}
