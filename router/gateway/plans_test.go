package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentRequestsKeepTheirPlans runs many requests at once through
// the gateway, whose plans (and the scheduler's scratch memory in them) are
// pooled and reused: every response must come from the replica its headers
// name, and under -race no two requests may touch one plan at a time.
func TestConcurrentRequestsKeepTheirPlans(t *testing.T) {
	var addrs []string
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		addrs = append(addrs, backend(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"served_by": %q}`, name)
		}))
	}
	h := newHarness(t, 1<<20, addrs...)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				body := fmt.Sprintf(`{"model": "m", "prompt": %q}`, strings.Repeat(fmt.Sprintf("worker %d request %d ", g, i), 20))
				resp, err := http.Post(h.srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				var got struct {
					ServedBy string `json:"served_by"`
				}
				err = json.NewDecoder(resp.Body).Decode(&got)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || got.ServedBy != resp.Header.Get(HeaderReplica) {
					errs <- fmt.Errorf("worker %d request %d: status %d, served by %q, header names %q, decode error %v",
						g, i, resp.StatusCode, got.ServedBy, resp.Header.Get(HeaderReplica), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
