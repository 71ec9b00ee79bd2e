// Package respstore keeps the Responses API's conversations for the
// router, so that a previous_response_id chain works across a fleet.
//
// vLLM can keep responses itself, but only when an environment switch is
// on, and then in an unbounded map inside one API server: a chain breaks
// when its next turn reaches another replica or the replica restarts. The
// router keeps the conversation instead and sends engines stateless
// requests (every turn's whole input, store false). What a response id
// continues from is the turn's whole input followed by the response's
// output items; GET /v1/responses/{id} answers the response object as the
// engine sent it.
//
// A response is kept by the router that served it, in memory, bounded by
// Options.MaxBytes (least recently used first out) and for Options.TTL
// after it is made (each turn of a chain is a new entry). Its
// id names that router: resp_ then a tag of the holder's ingest address
// (8 bytes of SHA-256, hex) then 16 random bytes (hex). A router that
// gets an id it does not hold asks the holder over the routers' ingest
// listeners, with the peers' shared token (Fleet). A response belongs to
// the tenant whose key created it: another tenant's id is answered as
// unknown, so ids cannot be probed. When the holder is gone (stopped,
// restarted, or its entry evicted), the chain's next turn gets 404
// previous_response_not_found and the client must send the conversation
// in full.
//
// It must not import gin or the gateway.
package respstore
