// Package kvpub publishes vllm-sim's KV events the way vLLM's
// ZmqEventPublisher does, byte for byte: a PUB socket that binds or connects
// by vLLM's endpoint rule, three-frame messages [topic, seq, payload] with seq
// an 8-byte big-endian counter from 0, payloads encoded as msgspec encodes
// them (compact integers, float64 timestamps, every array field present), and
// an optional replay ROUTER socket answering in the v0.26+ or the older frame
// shape.
//
// Older schemas and the map encoding are selectable so that consumers can be
// tested against every form vLLM has shipped.
package kvpub
