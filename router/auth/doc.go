// Package auth resolves a client's API key to the tenant it belongs to.
//
// Keys come from two places, which may be combined:
//
//   - a plain list (api_keys, LLMGW_API_KEYS, -api-keys): each key is its
//     own tenant, named "key-" and the first 12 hex digits of the key's
//     SHA-256, with every model allowed and no limits. Each key gets its
//     own share in admission and its own line in logs, without the key
//     itself ever being written anywhere.
//   - a keys file (auth { keys_file = "..." }): JSON that maps SHA-256
//     hashes of keys to named tenants with their models, limits, priority,
//     weight and cache isolation (see ParseFile for the format).
//
// Keys are stored and compared only as SHA-256 hashes. API keys are long
// random strings, not passwords: a slow, salted password hash protects a
// low-entropy secret against guessing, which a 128-bit random key does not
// need, and a plain hash keeps the check at well under a microsecond on
// every request. A lookup indexes by the hash's first eight bytes and then
// compares the whole hash with subtle.ConstantTimeCompare, so the time a
// check takes says nothing about how close a guess came.
//
// A Store holds the current Table behind an atomic pointer. Reloading the
// file (on change, polled, or on request, e.g. SIGHUP) builds a whole new
// Table and swaps it in: requests in flight keep the tenant they resolved,
// and a file that does not parse or validate is rejected with an error
// that names the problem while the old Table stays in force.
//
// It must not import gin or anything of the gateway: only router/tenant
// and go-hclog.
package auth
