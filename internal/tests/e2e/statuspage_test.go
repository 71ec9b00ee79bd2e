package e2e

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// screenshotsEnv names a folder the browser test writes its screenshots
// to (status-page-desktop.png, status-page-phone.png); unset, a temporary
// one.
const screenshotsEnv = "LLMGW_STATUS_SCREENSHOTS"

// TestStatusPageInBrowser loads the router's status page in headless
// Chromium against a running fleet: two replicas whose driver forwards
// their KV events (exact), one that advertises none (approx), and a second
// router that shares its load (a peer). The page is behind admin_token;
// Chromium reaches it through a proxy that adds the header, as an
// operator's authenticating proxy would. The rendered DOM must show every
// replica with its mode and role, the driver session, the peer and the
// decisions; screenshots at desktop and phone size are saved.
func TestStatusPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, vllm-sim processes and Chromium")
	}
	browser := chromium(t)
	f := startFleetWith(t, nil, nil)
	approx := startSim(t)
	registerReplica(t, f.agent.Client, "alloc-2/main", approx, false)

	const adminToken = "status-admin-secret"
	c := routerConfig(token)
	c.Consul.Address, c.Consul.Services, c.Consul.Register = f.agent.Addr, []string{"vllm"}, true
	c.Consul.ServiceID, c.Consul.CheckInterval = "router-1", time.Second
	c.HTTP.AdminToken = adminToken
	r1 := startRouter(t, c)
	f.router(t, "router-2") // a peer
	poll.Until(t, "three replicas from consul", func() bool { return len(r1.Replicas().ForModel(model)) == 3 })
	waitExact(t, r1, f.ids...)
	if r1.Replicas().Mode("alloc-2/main") != scheduler.ModeApprox {
		t.Fatal("alloc-2/main is not approx")
	}
	for i := range 6 {
		if a := call(t, r1.Addr(), "/v1/completions", completion(longPrompt(i%3), false)); a.code != 200 {
			t.Fatalf("request %d: %d %s", i, a.code, a.body)
		}
	}

	admin := "http://" + r1.AdminAddr() + server.StatusPath
	if resp, err := http.Get(admin); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the page without the admin token: %v %v; want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	target, _ := url.Parse("http://" + r1.AdminAddr())
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Set("Authorization", "Bearer "+adminToken)
	}}
	front := httptest.NewServer(proxy)
	defer front.Close()
	page := front.URL + server.StatusPath

	// The peer's first report and the driver session are asynchronous:
	// wait for them on the page itself before the browser loads it.
	poll.Until(t, "the page to show the peer", func() bool {
		resp, err := http.Get(page)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return strings.Contains(b.String(), `id="peer-count">1<`)
	})

	dom := string(runChromium(t, browser, "--dump-dom", page))
	want := []string{
		`<h3 class="model" data-model="sim-model">sim-model</h3>`,
		`data-replica="alloc-0/main" data-mode="exact" data-role="agg"`,
		`data-replica="alloc-1/main" data-mode="exact" data-role="agg"`,
		`data-replica="alloc-2/main" data-mode="approx" data-role="agg"`,
		`<td class="prefill"><span class="muted">none</span></td>`, // no prefill replica in an aggregated fleet
		"driver node-1 holds its KV state",
		"it does not advertise KV events (kv_events=false)",
		`<span class="mode-exact">in sync</span>`, // node-1's session
		`id="peer-count">1<`,
		"<td>total</td>",
	}
	for _, w := range want {
		if !strings.Contains(dom, w) {
			t.Errorf("rendered DOM lacks %q", w)
		}
	}
	if n := strings.Count(dom, `<tr class="decision">`); n != 6 {
		t.Errorf("%d decisions in the log; want the 6 routed requests", n)
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s", dom)
	}

	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, shot := range []struct {
		name          string
		width, height int
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		path := filepath.Join(dir, "status-page-"+shot.name+".png")
		runChromium(t, browser, "--screenshot="+path, fmt.Sprintf("--window-size=%d,%d", shot.width, shot.height), page)
		checkPNG(t, path, shot.width, shot.height)
		t.Logf("%s screenshot: %s", shot.name, path)
	}
}

// checkPNG fails unless path is a PNG of the viewport's size.
func checkPNG(t *testing.T, path string, width, height int) {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer fh.Close()
	cfg, err := png.DecodeConfig(fh)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if cfg.Width != width || cfg.Height != height {
		t.Errorf("screenshot %s is %dx%d; want the %dx%d viewport", path, cfg.Width, cfg.Height, width, height)
	}
}
