package scheduler

import "testing"

// TestStateKeyBounds: a key holds a value per candidate of the current
// decision only; the zero key and positions outside the candidates hold
// nothing and disturb no other key; a new decision forgets everything.
func TestStateKeyBounds(t *testing.T) {
	other := NewStateKey[string]("other")
	var zero StateKey[string]
	req := &Request{}
	Predictions.Set(req, 0, Prediction{Blocks: 1}) // outside Schedule: no candidates
	if _, ok := Predictions.Get(req, 0); ok {
		t.Fatal("a value set outside a decision was kept")
	}
	req.resetCycle(2)
	want := Prediction{Blocks: 3, Credit: 2.5, Mode: ModeExact}
	Predictions.Set(req, 1, want)
	zero.Set(req, 1, "zero")
	other.Set(req, 0, "a")
	other.Set(req, 2, "beyond")
	other.Set(req, -1, "before")
	if got, ok := Predictions.Get(req, 1); !ok || got != want {
		t.Errorf("Predictions[1] = %+v, %t; want %+v", got, ok, want)
	}
	if _, ok := Predictions.Get(req, 0); ok {
		t.Error("Predictions[0] set, though nothing set it")
	}
	if v, ok := zero.Get(req, 1); ok {
		t.Errorf("the zero key holds %q", v)
	}
	if v, ok := other.Get(req, 0); !ok || v != "a" {
		t.Errorf("other[0] = %q, %t; want a", v, ok)
	}
	for _, i := range []int{-1, 2} {
		if v, ok := other.Get(req, i); ok {
			t.Errorf("other[%d] = %q outside the candidates", i, v)
		}
	}
	req.resetCycle(3)
	if _, ok := other.Get(req, 0); ok {
		t.Error("a value survived into the next decision")
	}
	if _, ok := Predictions.Get(req, 1); ok {
		t.Error("a prediction survived into the next decision")
	}
}
