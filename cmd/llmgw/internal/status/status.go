// Package status is `llmgw status`: it asks every router what it sees of
// the fleet (GET /admin/replicas on its admin listener) and prints one table per router: each
// replica's model, routing mode, breaker health, Consul health and whether
// it drains, indexed KV blocks, load, and the LoRA adapters it serves.
//
// Routers are found in Consul (passing llmgw-router instances, at the
// admin port their llmgw-admin-port meta advertises) unless their admin
// addresses are named directly. It imports consul/ and the Consul API client; it
// reads the routers over HTTP only, never importing router/ packages.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/llmgw/llmgw/consul"
)

// Options say where to look.
type Options struct {
	// Consul is the agent's HTTP address, used when Routers is empty.
	Consul string
	// Routers are router admin addresses (host:port, their admin_listen)
	// to ask directly.
	Routers []string
	// AdminToken is sent as a Bearer token, for routers with admin_token.
	AdminToken string
	// Timeout bounds finding the routers and each router's answer
	// (default 10 s).
	Timeout time.Duration
}

// replica is one row of a router's /admin/replicas answer.
type replica struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	Mode  string `json:"mode"`
	// Role is agg, prefill or decode: which step of a disaggregated
	// model's requests the replica takes.
	Role    string `json:"role"`
	Healthy bool   `json:"healthy"`
	// Health is the Consul check state ("" for static replicas); Draining
	// is set while it warns or is in maintenance.
	Health    string   `json:"health"`
	Draining  bool     `json:"draining"`
	Adapters  []string `json:"adapters"`
	KVEvents  bool     `json:"kv_events"`
	GPUBlocks int      `json:"gpu_blocks"`
	CPUBlocks int      `json:"cpu_blocks"`
	// Load's InFlight counts every router's requests; PeerLoad says how
	// many of them the router's peers reported (router/peers).
	Load struct {
		InFlight int
		Waiting  float64
		Running  float64
		KVUsage  float64
	} `json:"load"`
	PeerLoad struct {
		InFlight int
	} `json:"peer_load"`
}

// Run prints the fleet as each router sees it. It fails when no router is
// found or any router cannot be read, after printing what it could read.
func Run(ctx context.Context, opts Options, w io.Writer) error {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	routers := opts.Routers
	if len(routers) == 0 {
		found, err := findRouters(ctx, opts.Consul, opts.Timeout)
		if err != nil {
			return err
		}
		routers = found
	}
	client := &http.Client{Timeout: opts.Timeout, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var errs []error
	for _, addr := range routers {
		replicas, err := fetch(ctx, client, addr, opts.AdminToken)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := printRouter(w, addr, replicas); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
	}
	return errors.Join(errs...)
}

// findRouters returns the API addresses of the passing llmgw-router
// instances in Consul.
func findRouters(ctx context.Context, addr string, timeout time.Duration) ([]string, error) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client, err := api.NewClient(&api.Config{Address: addr, Transport: tr})
	if err != nil {
		return nil, fmt.Errorf("consul client for %s: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := consul.WatchRouters(ctx, client, consul.WatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("find routers in consul at %s: %w", addr, err)
	}
	defer w.Close()
	select {
	case <-w.Changed():
	case <-ctx.Done():
		return nil, fmt.Errorf("find routers in consul at %s: %w (last status: %v)", addr, ctx.Err(), w.Status())
	}
	set, _ := w.Current()
	if len(set) == 0 {
		return nil, fmt.Errorf("no passing llmgw-router instances in consul at %s", addr)
	}
	out := make([]string, 0, len(set))
	var errs []error
	for _, r := range set {
		if r.AdminPort == 0 {
			errs = append(errs, fmt.Errorf("router %s advertises no admin port (service meta %s); name its admin address with -router", r.ID, consul.MetaAdminPort))
			continue
		}
		out = append(out, net.JoinHostPort(r.Address, strconv.Itoa(r.AdminPort)))
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func fetch(ctx context.Context, client *http.Client, addr, token string) ([]replica, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/admin/replicas", nil)
	if err != nil {
		return nil, fmt.Errorf("router %s: %w", addr, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("router %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, fmt.Errorf("router %s: GET /admin/replicas: %s: the router's admin_token is needed (-admin-token or LLMGW_ADMIN_TOKEN)", addr, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("router %s: GET /admin/replicas: %s", addr, resp.Status)
	}
	var body struct {
		Replicas []replica `json:"replicas"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("router %s: decode /admin/replicas: %w", addr, err)
	}
	return body.Replicas, nil
}

func printRouter(w io.Writer, router string, replicas []replica) error {
	fmt.Fprintf(w, "router %s: %d replicas\n", router, len(replicas))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  REPLICA\tMODEL\tROLE\tMODE\tHEALTHY\tCONSUL\tDRAINING\tKV EVENTS\tGPU BLOCKS\tCPU BLOCKS\tIN FLIGHT\tBY PEERS\tRUNNING\tWAITING\tKV USAGE\tADAPTERS")
	for _, r := range replicas {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%t\t%s\t%t\t%t\t%d\t%d\t%d\t%d\t%g\t%g\t%.0f%%\t%s\n", r.ID, r.Model, orDash(r.Role), r.Mode, r.Healthy,
			orDash(r.Health), r.Draining, r.KVEvents,
			r.GPUBlocks, r.CPUBlocks, r.Load.InFlight, r.PeerLoad.InFlight, r.Load.Running, r.Load.Waiting, r.Load.KVUsage*100, orDash(strings.Join(r.Adapters, ",")))
	}
	return tw.Flush()
}

// orDash keeps a table cell from being empty, so every row has as many
// fields as the header.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
