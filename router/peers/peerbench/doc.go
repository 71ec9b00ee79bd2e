// Package peerbench measures router/peers at fleet scale: it runs a number
// of routers' peer tables and publishers in one process, each table behind
// its own real HTTP server on loopback, changes every router's load all
// the time, and counts what crosses the wire (requests and bytes read by
// the servers) and the CPU the process spends, per router.
//
// It is test support for benchmarks and the growth-curve sweep (Run), not
// part of the router. It imports router/peers, router/scheduler and
// router/ratelimit, nothing of the gateway.
package peerbench
