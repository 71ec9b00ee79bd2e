// Package kvtest is test support for the KV-event pipelines, shared by the
// tests of driver/kvevents/intake and driver/kvevents/forward: builders for
// events and blocks, a mirror fed from a store's session, and a real HTTP
// router that receives kvwire updates into a mirror. Production code must
// not import it.
package kvtest
