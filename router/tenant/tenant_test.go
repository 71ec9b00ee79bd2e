package tenant

import (
	"context"
	"testing"
)

func TestAllows(t *testing.T) {
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
