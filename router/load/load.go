package load

// Load is a replica's current load: router-side counts (this router's and
// its peers', see Peer) plus what the replica's /metrics reported last.
type Load struct {
	InFlight       int     // requests the routers have in flight to it
	InFlightTokens int     // their prompt tokens
	Waiting        float64 // vllm:num_requests_waiting
	Running        float64 // vllm:num_requests_running
	KVUsage        float64 // vllm:kv_cache_usage_perc, in [0, 1]

	// PrefillTokens are the predicted uncached prompt tokens of the
	// routers' requests in flight to the replica that the replica has not
	// answered yet: the prefill queued ahead of a new request.
	PrefillTokens int
}

// Peer is the router-side load other routers report on a replica
// (router/peers). The Tracker adds it into Load's InFlight,
// InFlightTokens and PrefillTokens, which are therefore the fleet's
// counts: routers behind one name do not all pick the same idle replica in
// the second before its engine metrics show the burst.
type Peer struct {
	InFlight       int
	InFlightTokens int
	PrefillTokens  int
}
