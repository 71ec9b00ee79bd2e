// Package autoscale turns what a router knows of a model's load into the
// signal a fleet scaler (the Nomad Autoscaler) needs: the demand on the
// model, and the replica count that would serve it within its targets.
//
// Only the router knows the demand in the unit that costs a replica time:
// the prompt tokens it still has to prefill after the cache hits the
// router predicted (router/load), and the requests it holds in flight or
// queued because every replica is busy (router/admission). An engine's own
// metrics see one replica, and not the requests the router holds back.
//
// # The recommended replica count
//
// Policy.Recommend takes the larger of two counts, each the replicas that
// would serve the current demand at its target:
//
//   - prefill: ceil(queued uncached prefill tokens ÷ (prefill rate ×
//     TTFT target)). A replica prefilling R tokens a second clears R×T
//     tokens of queue within a TTFT target of T; the demand needs as many
//     replicas as that fits into. R is the replicas' measured rate
//     (load.Tracker.PrefillRate); where it is unknown the term is 0.
//   - concurrency: ceil((requests in flight + requests waiting in the
//     router's queue) ÷ in-flight target per replica). It counts decode
//     too, which prefill alone misses: short prompts with long answers
//     hold a replica's batch without queueing prefill.
//
// Both are leading measures: they rise as load arrives, before the time
// to first token does. The count is 0 only when there is no demand at
// all, and at least 1 whenever a request waits or is in flight, so a
// model scaled to zero with a request waiting recommends one replica.
//
// The count is instantaneous. It is not smoothed here: the scaler's query
// takes its maximum over a window (max_over_time), so that scaling out
// follows the first sample over the current count and scaling in waits
// for the window to pass with lower demand, and the scaler's cooldown
// bounds how often either happens. Keeping the window in the policy lets
// an operator tune it without restarting routers, and lets every router's
// figure be read alike (the policy takes the maximum over routers; each
// router counts its peers' in-flight requests and queued prefill, but only
// its own queue).
//
// SLO attainment (the share of answers whose time to first token met the
// target) is exported beside the recommendation but does not drive it. The
// time is the replica's, from the router sending the request to its first
// byte; the wait in the router's own queue before that is exported apart
// (the oldest wait), so that a replica shortfall and a slow replica read
// differently. Attainment does not drive the count because it lags the
// load that caused it, and a count raised whenever attainment is low keeps
// rising while the new replicas start. It is what an operator alerts on
// and tunes the targets by.
//
// It imports nothing outside the standard library.
package autoscale
