// Package plugin implements Nomad's driver plugin protocol on go-plugin and
// gRPC: our own .proto files, wire-compatible with Nomad's, their generated
// code, the serve glue, and a plugin host that plays the Nomad client in tests.
//
// It knows nothing about vLLM; driver/ builds on it.
package plugin
