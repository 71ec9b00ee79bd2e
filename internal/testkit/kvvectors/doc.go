// Package kvvectors holds byte vectors of vLLM's KV-event wire format,
// written by hand from vLLM's struct definitions and ZMQ publisher
// (vllm/distributed/kv_events.py), msgspec's encoding rules and a
// published capture of a vLLM 0.26 batch: the frames, the array layout of
// each schema length, and the map encoding. docs/PROTOCOLS.md describes
// them.
//
// Both sides of the wire test against these bytes: vllm-sim's encoder must
// produce them exactly, and the driver's decoder must read them. Neither side
// generates them, so a bug shared by encoder and decoder cannot hide behind a
// round trip. Test support only: production code never imports it.
package kvvectors
