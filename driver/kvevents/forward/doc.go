// Package forward carries a kvevents.Store to every router instance: a
// Forwarder follows the router set (from Consul, ConsulRouters, optionally
// over HTTPS), runs one session per router that drains the Store (snapshot
// first, then net deltas every flush interval) and posts each drain as an
// internal/kvwire update, retrying with backoff and resending a snapshot
// when a router restarts or turns ready.
//
// It imports driver/kvevents for the Store and its Sessions, never
// driver/kvevents/intake: the engines' side of the Store is the intake's
// business.
package forward
