// Package migrate keeps a streamed completion alive when its replica fails
// after the first byte: it re-issues the request to another replica with
// the tokens already streamed appended, and splices the second stream into
// the first so that the client sees one answer.
//
// Plan decides up front whether a request can be continued at all (n > 1,
// best_of, echo, logprobs, a batch of prompts, suffix and structured
// output cannot: see Check) and builds the continuation: for
// /v1/completions the prompt becomes the token ids the engine reported
// (the prompt's and the output's so far, asked for with vLLM's
// return_token_ids), for /v1/chat/completions the partial assistant
// message is appended with continue_final_message, both with max_tokens
// reduced by what was generated. Stream watches the engine's SSE events,
// records what reached the client, and on a failure (a read error, EOF
// before [DONE], an error event) asks a Reissuer for the continuation's
// stream; it rewrites that stream's chunks to the first one's id, created
// and model, drops its role chunk, and makes its usage count the whole
// answer. Anything it cannot continue ends, as before, with an error event
// that says why, and [DONE].
//
// It imports only router/openai; the gateway supplies the Reissuer (its
// scheduler and transport) and the hooks that count and log migrations.
package migrate
