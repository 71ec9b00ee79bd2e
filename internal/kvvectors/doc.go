// Package kvvectors holds byte vectors of vLLM's KV-event wire format,
// transcribed by hand from the annotated captures and schema rules in
// shared/reference/vllm-kv-events.md (section 1.3 and 1.4).
//
// Both sides of the wire test against these bytes: vllm-sim's encoder must
// produce them exactly, and the driver's decoder must read them. Neither side
// generates them, so a bug shared by encoder and decoder cannot hide behind a
// round trip. Test support only: production code never imports it.
package kvvectors
