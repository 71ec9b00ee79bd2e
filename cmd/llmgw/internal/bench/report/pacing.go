package report

import (
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// HostLimitLag is the send lag (p99) above which a run is marked as
// limited by the host: the client, starved of CPU, sent its requests
// later than the workload scheduled them, so the offered rate was not the
// rate the fleet saw and the run measures the machine, not the policy.
const HostLimitLag = 50 * time.Millisecond

// SendLag is how late the client sent each open-loop request: Sent minus
// its scheduled arrival, over the results that were sent. scheduled[i] is
// results[i]'s arrival, or a negative value for a request that waits for
// another (a chat round), whose lag is the wait, not the host's.
func SendLag(scheduled []time.Duration, results []client.Result) Percentiles {
	var lags []time.Duration
	for i, r := range results {
		if i >= len(scheduled) || scheduled[i] < 0 || (r.Status == 0 && r.Attempts == 0) {
			continue
		}
		lags = append(lags, max(r.Sent-scheduled[i], 0))
	}
	return percentiles(lags)
}

// HostLimited reports whether the client fell behind the schedule (its
// p99 send lag over HostLimitLag).
func (s *Summary) HostLimited() bool {
	return time.Duration(float64(s.SendLag.P99)*float64(time.Millisecond)) > HostLimitLag
}
