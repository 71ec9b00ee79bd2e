// Package structs is the generated code of structs.proto, the shared
// structures of Nomad's plugin protocol that drivers use
// (hashicorp.nomad.plugins.shared.structs: fingerprint attributes, the
// recoverable-error marker). `make proto` regenerates it.
package structs
