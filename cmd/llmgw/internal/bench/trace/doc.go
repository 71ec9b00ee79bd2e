// Package trace reads request traces in the Mooncake format (FAST'25): one
// JSON object per line with the arrival `timestamp` in milliseconds, the
// prompt's `input_length` and the answer's `output_length` in tokens, and
// `hash_ids`, one id per block of the prompt, where equal ids mean equal
// token blocks. Everything else on a line is ignored.
//
// It is a leaf: it imports only the standard library.
package trace
