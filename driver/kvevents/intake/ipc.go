package intake

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// The event and replay sockets of a replica whose engine binds ipc://
// endpoints, in a directory the driver makes for it. vLLM's PUB binds an
// endpoint starting with ipc://, and the listener connects to it: only a
// process that may enter the directory can connect at all, which a TCP
// port on loopback cannot offer.
//
// Both names contain "inproc" on purpose. vLLM derives data-parallel rank
// r's endpoints with offset_endpoint_port, which appends "_dp{r}" to any
// endpoint containing "inproc" (a substring test), adds r to the port of
// one containing "tcp", and raises ValueError for anything else. With the
// word in the file name an ipc:// endpoint serves every rank, each on a
// socket file of its own.
const (
	eventsSocket = "inproc-events"
	replaySocket = "inproc-replay"
)

// MaxSocketPath is the longest path a Unix socket address holds on Linux:
// sun_path is 108 bytes, one of them the terminating NUL. libzmq refuses a
// longer one (ENAMETOOLONG) when the engine binds or the listener
// connects.
const MaxSocketPath = 107

// IPCEndpoints are rank 0's event and replay endpoints in dir.
func IPCEndpoints(dir string) (events, replay string) {
	return "ipc://" + filepath.Join(dir, eventsSocket), "ipc://" + filepath.Join(dir, replaySocket)
}

// RankEndpoint is the endpoint data-parallel rank r publishes on, derived
// from rank 0's as vLLM's offset_endpoint_port derives it for the
// endpoints this package hands out: a "_dp{r}" suffix on ipc ones (their
// names contain "inproc"), the port plus r on tcp://host:port ones.
func RankEndpoint(endpoint string, rank int) string {
	if rank == 0 || endpoint == "" {
		return endpoint
	}
	if strings.HasPrefix(endpoint, "ipc://") {
		return endpoint + "_dp" + strconv.Itoa(rank)
	}
	host, port, err := splitTCP(endpoint)
	if err != nil {
		return endpoint
	}
	return "tcp://" + host + ":" + strconv.Itoa(port+rank)
}

// CheckIPCDir reports whether every socket path of a replica with
// dataParallel ranks fits a Unix socket address; the longest is the last
// rank's replay socket.
func CheckIPCDir(dir string, dataParallel int) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("socket directory %q: want an absolute path", dir)
	}
	_, replay := IPCEndpoints(dir)
	longest := RankEndpoint(replay, max(dataParallel, 1)-1)[len("ipc://"):]
	if n := len(longest); n > MaxSocketPath {
		return fmt.Errorf("socket path %s is %d bytes, over the %d a Unix socket address holds", longest, n, MaxSocketPath)
	}
	return nil
}

// splitTCP reads tcp://host:port.
func splitTCP(endpoint string) (string, int, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", 0, fmt.Errorf("endpoint %q: not tcp://host:port", endpoint)
	}
	host, p, err := net.SplitHostPort(rest)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint %q: port %q: %w", endpoint, p, err)
	}
	return host, port, nil
}
