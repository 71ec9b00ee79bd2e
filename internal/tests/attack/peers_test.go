package attack

import (
	"net/http"
	"testing"
)

// driverTokenOnPeers: a GPU node's kv_token, which may report blocks, is
// refused with 401 on every router-to-router path of the ingest listener:
// a peer load claiming a billion requests for one tenant (which would
// lock that tenant out fleet-wide), and a Responses conversation fetch
// and delete. The same listener takes the peer token on the same path,
// so the 401 is the token's and not a path that is not served.
func driverTokenOnPeers(t *testing.T, r *router) {
	const lockOut = `{"version":2,"router":"evil/1","seq":1,"replicas":[],"tenants":[{"tenant":"team-a","requests":1000000000,"tokens":1000000000}]}`
	base := "http://" + r.Ingest
	for _, tt := range []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"peer load, kv_token", "POST", "/v1/peer-load", kvToken, lockOut, http.StatusUnauthorized},
		{"conversation fetch, kv_token", "GET", "/llmgw/v1/responses/resp_0?tenant=team-a", kvToken, "", http.StatusUnauthorized},
		{"conversation delete, kv_token", "DELETE", "/llmgw/v1/responses/resp_0?tenant=team-a", kvToken, "", http.StatusUnauthorized},
		{"peer load, peer_token", "POST", "/v1/peer-load", peerToken, `{"version":2,"router":"peer/1","seq":1,"replicas":[]}`, http.StatusNoContent},
	} {
		h := http.Header{"Authorization": {"Bearer " + tt.token}, "Content-Type": {"application/json"}}
		if c := status(t, tt.method, base+tt.path, h, tt.body); c != tt.want {
			t.Errorf("%s: %s %s: %d; want %d", tt.name, tt.method, tt.path, c, tt.want)
		}
	}
	t.Logf("BOUND driver token on the peer paths: 401 on peer load and conversation fetch and delete; the peer token 204")
}
