package route

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/tenant"
)

// TestPlace: a utility request goes to a replica of the model it names,
// or of the key's only model; it is refused as OpenAI refuses a model
// the key may not use, and asks for a model where the key may use
// several; and nothing is learned from it.
func TestPlace(t *testing.T) {
	pl := newTestPlannerOf(t, "m", "m", "m2")
	ctx := func(models ...string) context.Context {
		return tenant.NewContext(context.Background(), &tenant.Tenant{Name: "t", Models: models})
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		model  string
		status int
		msg    string
	}{
		{"named", ctx(), "m", 0, ""},
		{"the key's only model", ctx("m"), "", 0, ""},
		{"a model the key may not use", ctx("other"), "m", http.StatusNotFound, "does not exist or you do not have access"},
		{"a model nobody serves", ctx(), "gone", http.StatusNotFound, "does not exist"},
		{"no model, one allowed of the fleet's two", ctx("m", "other"), "", 0, ""},
		{"no model, several allowed", ctx(), "", http.StatusBadRequest, "names no model, and this key may use 2"},
		{"no model, no key, several served", context.Background(), "", http.StatusBadRequest, "set model"},
	} {
		p, e := pl.Place(tc.ctx, tc.model)
		switch {
		case tc.status == 0 && e != nil:
			t.Errorf("%s: %v", tc.name, e)
		case tc.status == 0 && (len(p.Attempts) == 0 || p.Attempts[0].Model != "m"):
			t.Errorf("%s: attempts %+v; want a replica of m", tc.name, p.Attempts)
		case tc.status != 0 && (e == nil || e.Status != tc.status || !strings.Contains(e.Message, tc.msg)):
			t.Errorf("%s: %v; want %d naming %q", tc.name, e, tc.status, tc.msg)
		}
		if p != nil {
			p.Sent(p.Attempts[0])
			p.Served(p.Attempts[0])
			pl.Release(p)
		}
	}
	if d := pl.RecentDecisions(); len(d) != 0 {
		t.Errorf("utility plans logged decisions: %+v", d)
	}
}
