package server

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestDriverSessionMetrics: a driver's snapshot opens a session that
// /metrics counts, with the seconds since its last update; once the driver
// stays silent for driver_expiry the session is dropped and counted as
// expired.
func TestDriverSessionMetrics(t *testing.T) {
	c := testConfig()
	c.DriverExpiry = 300 * time.Millisecond
	s, err := Start(context.Background(), c, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitMetrics(t, s.AdminAddr(), "llmgw_kv_driver_sessions 0", "llmgw_kv_driver_sessions_expired_total 0")

	postSnapshot(t, s.IngestAddr(), 1, "a/1", 2)
	waitMetrics(t, s.AdminAddr(), "llmgw_kv_driver_sessions 1", `llmgw_kv_driver_silence_seconds{driver="n"} `)
	_, m := get(t, "http://"+s.AdminAddr()+"/metrics")
	sm := regexp.MustCompile(`llmgw_kv_driver_silence_seconds\{driver="n"\} (\S+)`).FindStringSubmatch(m)
	if sm == nil {
		t.Fatalf("no silence series for driver n:\n%s", m)
	}
	if v, err := strconv.ParseFloat(sm[1], 64); err != nil || v < 0 || v > c.DriverExpiry.Seconds()*2 {
		t.Errorf("silence of a driver that just sent: %s; want 0 to %v", sm[1], 2*c.DriverExpiry)
	}

	// The driver sends nothing more: the session expires.
	waitMetrics(t, s.AdminAddr(), "llmgw_kv_driver_sessions 0", "llmgw_kv_driver_sessions_expired_total 1")
	if _, m := get(t, "http://"+s.AdminAddr()+"/metrics"); regexp.MustCompile(`llmgw_kv_driver_silence_seconds\{`).MatchString(m) {
		t.Errorf("an expired session still has a silence series:\n%s", m)
	}
}
