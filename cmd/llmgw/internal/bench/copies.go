package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// copiesMetric counts the prompts a router sent to an idle replica to
// copy a hot shared prefix there (router/gateway, the hot-prefix
// replicator); the answered ones carry result="ok".
const copiesMetric = "llmgw_prefix_warms_total"

// prefixCopies sums the answered copies over the routers' admin
// listeners. The routers start with each policy, so their counters hold
// that policy's run alone; a router killed during the run takes its
// count with it.
func prefixCopies(ctx context.Context, hc *http.Client, admins []string) (int, error) {
	if slices.Contains(admins, "") {
		return 0, errors.New("router metrics: a router without an admin listener")
	}
	n, err := sumCounter(ctx, hc, admins, copiesMetric, labelPair{"result", "ok"})
	if err != nil {
		return 0, fmt.Errorf("router metrics: %w", err)
	}
	return int(n), nil
}
