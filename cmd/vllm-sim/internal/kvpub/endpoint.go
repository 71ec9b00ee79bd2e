package kvpub

import (
	"fmt"
	"strconv"
	"strings"
)

// binds reports whether vLLM binds (rather than connects) its PUB socket to
// endpoint: a string rule, not a parse. "tcp://0.0.0.0:5557" connects.
func binds(endpoint string) bool {
	return strings.Contains(endpoint, "*") || strings.Contains(endpoint, "::") ||
		strings.HasPrefix(endpoint, "ipc://") || strings.HasPrefix(endpoint, "inproc://")
}

// OffsetEndpointPort is vLLM's offset_endpoint_port: data-parallel rank r
// publishes on the endpoint's port plus r; an endpoint containing "inproc"
// gets a _dp{r} suffix. Both are substring tests, as in vLLM, so an ipc://
// endpoint whose path contains "inproc" (the driver's
// ipc://<dir>/inproc-events) works for every rank, each on a socket file
// of its own, while any other ipc:// endpoint is refused for r > 0.
func OffsetEndpointPort(endpoint string, rank int) (string, error) {
	if rank == 0 || endpoint == "" {
		return endpoint, nil
	}
	if strings.Contains(endpoint, "inproc") {
		return fmt.Sprintf("%s_dp%d", endpoint, rank), nil
	}
	if strings.Contains(endpoint, "tcp") {
		i := strings.LastIndexByte(endpoint, ':')
		port, err := strconv.Atoi(endpoint[i+1:])
		if err != nil {
			return "", fmt.Errorf("endpoint %q: port %q is not a number", endpoint, endpoint[i+1:])
		}
		return fmt.Sprintf("%s:%d", endpoint[:i], port+rank), nil
	}
	return "", fmt.Errorf("endpoint %q: must contain 'inproc' or 'tcp' for data-parallel rank %d", endpoint, rank)
}
