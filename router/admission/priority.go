package admission

import (
	"fmt"
	"math"
	"strconv"

	"github.com/llmgw/llmgw/router/tenant"
)

// HeaderPriority lets a request lower its own admission band below its
// tenant's priority (a batch job marking its requests as background, say).
// It can never raise the band: values above the tenant's priority count as
// the tenant's priority.
const HeaderPriority = "X-Llmgw-Priority"

// MinPriority and MaxPriority bound every band, a tenant's configured
// priority included. Bounding them keeps the bands of a pool, and the
// metric series labelled by band, to 21.
const (
	MinPriority = -10
	MaxPriority = 10
)

// NoPriority is what ParsePriority returns for an absent header: the
// tenant's own band.
const NoPriority = math.MaxInt

// ParsePriority reads a HeaderPriority value: an integer, or "" for none.
func ParsePriority(v string) (int, error) {
	if v == "" {
		return NoPriority, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		if len(v) > 32 {
			v = v[:32] + "..."
		}
		return 0, fmt.Errorf("header %s %q: want an integer band (%d to %d); it may only lower the key's priority", HeaderPriority, v, MinPriority, MaxPriority)
	}
	return n, nil
}

// Band is the band a request of t asking for priority (NoPriority: none)
// waits in: the lower of the two, clamped to MinPriority..MaxPriority.
func Band(t *tenant.Tenant, priority int) int {
	return min(max(min(t.Priority, priority), MinPriority), MaxPriority)
}
