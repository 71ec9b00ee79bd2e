package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// RSS is a process's resident memory in bytes, from /proc/<pid>/status.
func RSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("rss of %d: %q: %w", pid, v, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("rss of %d: no VmRSS line", pid)
}

// Migrations reads a router's count of streams it migrated that then
// reached [DONE]: llmgw_stream_migrations_total{result="succeeded"} on
// its admin listener's /metrics (0 before the first).
func Migrations(ctx context.Context, client *http.Client, adminURL string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("migrations: GET %s/metrics: %s", adminURL, resp.Status)
	}
	return parseMigrations(bufio.NewScanner(resp.Body))
}

// parseMigrations finds the succeeded migrations in a Prometheus text
// exposition.
func parseMigrations(sc *bufio.Scanner) (int, error) {
	const series = `llmgw_stream_migrations_total{result="succeeded"} `
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("migrations: %q: %w", v, err)
			}
			return int(n), nil
		}
	}
	return 0, sc.Err()
}
