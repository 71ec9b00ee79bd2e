package server

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/gateway"
	"github.com/llmgw/llmgw/router/ratelimit"
)

// startAuth opens the API keys and the tenants' limiter, and reloads the
// keys file on change and on SIGHUP. Without keys every client is
// anonymous, as before keys existed, and the router says so once.
func (s *Server) startAuth(ctx context.Context) (gateway.Authenticator, error) {
	a := s.cfg.Auth
	if len(a.APIKeys) == 0 && a.KeysFile == "" {
		s.log.Warn("no API keys configured: any client that reaches the API may use every model, without limits; set api_keys (LLMGW_API_KEYS) or auth { keys_file }")
		return nil, nil
	}
	store, err := auth.Open(auth.Options{Keys: a.APIKeys, File: a.KeysFile, Poll: a.ReloadInterval, Logger: s.log.Named("auth")})
	if err != nil {
		return nil, err
	}
	t := store.Table()
	s.log.Info("API keys loaded", "tenants", len(t.Tenants()), "keys", t.Keys(), "keys_file", a.KeysFile)
	s.limiter = ratelimit.New()
	if s.cfg.PeerInterval <= 0 || s.cfg.PeerToken == "" || s.cfg.Consul.Address == "" {
		s.log.Info("tenants' limits hold per router: sharing them with other routers needs peer_token, consul and peer_load_interval")
	}
	if a.KeysFile != "" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		reload := make(chan struct{})
		s.wg.Add(2)
		go func() {
			defer s.wg.Done()
			defer signal.Stop(hup)
			for {
				select {
				case <-ctx.Done():
					return
				case <-hup:
					s.log.Info("SIGHUP: reloading the keys file", "file", a.KeysFile)
					select {
					case reload <- struct{}{}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
		go func() {
			defer s.wg.Done()
			store.Run(ctx, reload)
		}()
	}
	return store, nil
}
