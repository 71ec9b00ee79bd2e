package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCreditAtSend: a request's replica is credited with its prompt when
// the request is sent, not when the replica answers. A sibling that
// arrives while the first request is still being prefilled (its replica
// has not answered) follows it there, though that replica is the busier
// one; credited only at the answer, it would go to the idle replica and
// compute the shared prompt a second time.
func TestCreditAtSend(t *testing.T) {
	arrived := make(chan string, 1)
	release := make(chan struct{})
	var first atomic.Bool
	engine := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if first.CompareAndSwap(false, true) {
				arrived <- name
				<-release // still prefilling: no headers yet
			}
			io.WriteString(w, `{"choices":[{"text":"ok"}]}`)
		}
	}
	h := newHarness(t, 1<<20, backend(t, engine("r0")), backend(t, engine("r1")))

	prompt := strings.Repeat("shared agent context word ", 400)
	body := `{"model":"m","prompt":"` + prompt + `","max_tokens":4}`
	var wg sync.WaitGroup
	wg.Add(1)
	var firstStatus int
	go func() {
		defer wg.Done()
		resp, err := http.Post(h.srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return
		}
		firstStatus = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	holder := <-arrived
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+prompt+` and one sibling task","max_tokens":4}`)
	close(release)
	wg.Wait()
	if resp.StatusCode != http.StatusOK || firstStatus != http.StatusOK {
		t.Fatalf("statuses %d and %d: %s", firstStatus, resp.StatusCode, b)
	}
	if got := resp.Header.Get(HeaderReplica); got != holder {
		t.Errorf("the sibling went to %q; want %s, where the first request with its prompt was sent and is still being prefilled", got, holder)
	}
}
