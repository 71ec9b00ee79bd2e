package nomad

import (
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// TokenEnv is the environment variable Nomad's own tools read the ACL
// token from; routers and drivers fall back to it.
const TokenEnv = "NOMAD_TOKEN"

// Config says where the Nomad agent is and whose view to read.
type Config struct {
	// Address of the agent's HTTP API (http://127.0.0.1:4646 when empty).
	Address string
	// Token is an ACL token that may read services and allocations
	// (read-job in the namespace); empty without ACLs.
	Token string
	// Namespace and Region default to the agent's ("default", its own).
	Namespace, Region string
}

// NewClient makes a Nomad API client for c. Settings c leaves empty come
// from Nomad's NOMAD_* environment variables, as for the nomad CLI.
func NewClient(c Config) (*api.Client, error) {
	cc := api.DefaultConfig()
	if c.Address != "" {
		cc.Address = c.Address
	}
	if c.Token != "" {
		cc.SecretID = c.Token
	}
	if c.Namespace != "" {
		cc.Namespace = c.Namespace
	}
	if c.Region != "" {
		cc.Region = c.Region
	}
	client, err := api.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("nomad client for %s: %w", cc.Address, err)
	}
	return client, nil
}
