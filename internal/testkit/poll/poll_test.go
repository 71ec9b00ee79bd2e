package poll

import (
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	calls := 0
	if !Within(time.Second, func() bool { calls++; return calls == 3 }) {
		t.Fatal("a condition that came true was reported as never holding")
	}
	if calls != 3 {
		t.Errorf("cond called %d times; want it checked until it held (3)", calls)
	}
	calls = 0
	if Within(0, func() bool { calls++; return false }) {
		t.Error("a condition that never held was reported as holding")
	}
	if calls == 0 {
		t.Error("cond never called with a zero deadline; want one check")
	}
}

func TestUntilHolds(t *testing.T) {
	n := 0
	Until(t, "the third check", func() bool { n++; return n >= 3 })
	if n != 3 {
		t.Errorf("cond called %d times; want 3", n)
	}
}
