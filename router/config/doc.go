// Package config loads llmgw-router's configuration: an HCL file (the format
// Nomad and Consul operators already write), then LLMGW_* environment
// variables, then command-line flags, each later source overriding the
// earlier one. Decoding is strict: an unknown attribute or block, a wrong
// type or an out-of-range value is an error naming the file position or the
// variable.
//
// It owns the Config struct and its validation, nothing else. It may import
// router/scheduler (for the scheduler section's types) but no other router
// package, and never driver/....
package config
