// Package load keeps each replica's load as the router sees it: its own
// requests and prompt tokens in flight, the prefill they still queue on the
// replica, the engine metrics last scraped, and what the other routers
// report of their own requests.
//
// The prefill queued on a replica is counted as the replica has yet to
// compute it: the uncached tokens of the routers' unanswered requests,
// drained with time at the replica's prefill rate (shared with the prefill
// other routers report queued there, so that the fleet's queue drains
// once, not once per router), which the tracker
// measures from the time to first token of requests sent to it while
// nothing was queued there (DefaultPrefillRate until then).
//
// It sits below every package that touches load, so none of them needs
// another for it: the gateway counts requests (Tracker.BeginPrefill), the
// engine-metrics scraper feeds SetScraped, router/peers exchanges Own and
// SetPeerLoads, router/replicas copies loads into the scheduler's
// candidates (Tracker.Read), and the scheduler's scorers read the Load
// values only. It imports nothing outside the standard library.
package load
