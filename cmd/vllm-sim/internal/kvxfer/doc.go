// Package kvxfer plays vLLM's NixlConnector for disaggregated prefill and
// decode: the --kv-transfer-config flag, the kv_transfer_params a request
// carries and a response returns, and the side channel over which a decode
// instance "reads" the KV blocks a prefill instance holds for it.
//
// A prefill instance (a request with do_remote_decode) computes the prompt,
// holds its blocks instead of freeing them, and answers with its engine id,
// the block ids, its side-channel host and port. A decode instance (a
// request with do_remote_prefill) finds its own prefix hit first, reads only
// the blocks it lacks over the side channel, which checks they are held,
// answers their tokens and hashes and releases them, and spends a modelled
// transfer time of bytes over bandwidth before generating. The side channel
// is HTTP with JSON bodies on the NIXL handshake port (vLLM's is a ZeroMQ
// handshake followed by RDMA reads): the protocol between two simulators is
// the simulator's own, only kv_transfer_params is vLLM's wire.
package kvxfer
