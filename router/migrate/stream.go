package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmgw/llmgw/router/openai"
)

// MaxEventBytes bounds one SSE event from an engine; a longer one fails
// the stream (an engine's chunks are a few hundred bytes).
const MaxEventBytes = 1 << 20

// Limits bound the migrations of one request.
type Limits struct {
	// MaxAttempts is how many times one stream may move (0: never).
	MaxAttempts int
	// MaxTokens is the most generated tokens a continuation may carry.
	MaxTokens int
}

// Reissuer sends a continuation to a replica other than those in failed
// (the last of which has just failed), and returns its streaming body.
type Reissuer interface {
	Reissue(ctx context.Context, body []byte, failed []string) (stream io.ReadCloser, replica string, err error)
}

// Hooks are told of a stream's migrations (metrics, logs); nil ones are
// skipped.
type Hooks struct {
	// Attempted: a continuation of carried tokens is sent on from replica from.
	Attempted func(from string, carried int)
	// Migrated: replica to answered the continuation.
	Migrated func(from, to string, carried int)
	// Succeeded: a migrated stream reached its [DONE].
	Succeeded func()
	// Refused: the stream of replica ended with an error event, for reason.
	Refused func(replica, reason string, cause error)
}

// Stream is an engine's SSE body that continues on another replica when
// it fails; see the package comment.
type Stream struct {
	ctx    context.Context
	plan   *Plan
	re     Reissuer
	limits Limits
	hooks  Hooks

	body    io.ReadCloser
	replica string
	failed  []string
	buf     []byte // bytes read, not yet a whole event
	out     []byte // bytes for the client
	readBuf []byte

	head      *chunk   // the first chunk: its id, created and model stay
	progress  Progress // its Text is set from text when a continuation is built
	text      strings.Builder
	carried   int // tokens the current replica was given as prompt
	moves     int
	finished  bool // a finish_reason was seen
	usageSent bool
	done      bool // [DONE] is in out, or the stream is closed
	refuse    string
	// promptTokens is the original request's prompt length when known:
	// for completions the engine's prompt ids, for chat the router's count.
	promptTokens int
}

// NewStream wraps the body of replica's streamed answer to a request
// planned by p. promptTokens is the router's count of the request's
// prompt tokens (0 when unknown), for a chat answer's usage.
func NewStream(ctx context.Context, body io.ReadCloser, replica string, p *Plan, re Reissuer, l Limits, h Hooks, promptTokens int) *Stream {
	return &Stream{ctx: ctx, body: body, replica: replica, plan: p, re: re, limits: l, hooks: h, promptTokens: promptTokens, readBuf: make([]byte, 32<<10)}
}

// Close closes the current replica's body.
func (s *Stream) Close() error {
	s.done = true
	return s.body.Close()
}

// Read gives the client whole events only, so that what it has seen is
// exactly what the stream has recorded.
func (s *Stream) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.done {
			return 0, io.EOF
		}
		n, err := s.body.Read(s.readBuf)
		s.buf = append(s.buf, s.readBuf[:n]...)
		if perr := s.events(); perr != nil && err == nil {
			err = perr
		}
		if s.done {
			break
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return 0, err // the client left: nobody to continue for
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // EOF before [DONE]
			}
			s.fail(err)
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// events handles every whole event in buf.
func (s *Stream) events() error {
	for !s.done {
		i := bytes.Index(s.buf, []byte("\n\n"))
		if i < 0 {
			if len(s.buf) > MaxEventBytes {
				return fmt.Errorf("an SSE event over %d bytes", MaxEventBytes)
			}
			return nil
		}
		ev := s.buf[:i+2]
		s.buf = s.buf[i+2:]
		if err := s.event(ev); err != nil {
			return err
		}
	}
	return nil
}

// event handles one event (its bytes end in a blank line).
func (s *Stream) event(ev []byte) error {
	data, ok := bytes.CutPrefix(bytes.TrimRight(ev, "\n"), []byte("data: "))
	if !ok {
		s.out = append(s.out, ev...) // a comment or another field: passed on
		return nil
	}
	if string(data) == "[DONE]" {
		s.finish()
		return nil
	}
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		// Not an engine's chunk: passed on as it came, as without
		// migration, but what the client saw is no longer known.
		s.refuse = ReasonUnparsed
		s.out = append(s.out, ev...)
		return nil
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("the engine sent an error event: %s", c.Error)
	}
	if s.head == nil {
		s.head = &c
	}
	if r := c.uncontinuable(); r != "" && s.refuse == "" {
		s.refuse = r
	}
	cont := s.moves > 0
	if cont && c.roleOnly() {
		return nil // the client has had its role chunk
	}
	var use *usage
	for _, ch := range c.Choices {
		if !cont && len(ch.PromptTokenIDs) > 0 {
			s.progress.PromptIDs = ch.PromptTokenIDs
		}
		if len(ch.TokenIDs) == 0 && (ch.Text != nil && *ch.Text != "" || ch.Delta != nil && ch.Delta.Content != nil && *ch.Delta.Content != "") && s.refuse == "" {
			s.refuse = ReasonNoTokenIDs
		}
		s.progress.IDs = append(s.progress.IDs, ch.TokenIDs...)
		if ch.FinishReason != nil {
			s.finished = true
		}
	}
	if s.plan.kind == openai.Chat { // completions continue from the ids alone
		s.text.WriteString(c.text())
	}
	if c.Usage != nil {
		s.usageSent = true
		if cont {
			use = s.wholeUsage(c.Usage)
		}
	}
	stripIDs := !s.plan.clientIDs
	if !cont {
		if stripIDs {
			data = dropKeys(data, "token_ids", "prompt_token_ids")
			s.out = append(append(append(s.out, "data: "...), data...), "\n\n"...)
			return nil
		}
		s.out = append(s.out, ev...)
		return nil
	}
	var head *chunk
	if cont {
		head = s.head
	}
	b, err := rewrite(data, head, stripIDs, cont, use)
	if err != nil {
		return fmt.Errorf("rewrite an SSE event: %w", err)
	}
	s.out = append(append(append(s.out, "data: "...), b...), "\n\n"...)
	return nil
}

// wholeUsage is a continuation's usage made to count the whole answer:
// the original prompt, and the tokens of every replica.
func (s *Stream) wholeUsage(u *usage) *usage {
	out := *u
	out.PromptTokens = max(u.PromptTokens-s.carried, 0)
	if n := s.originalPrompt(); n > 0 {
		out.PromptTokens = n
	}
	out.CompletionTokens = u.CompletionTokens + s.carried
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	if d := u.PromptTokensDetails; d != nil {
		dd := *d
		dd.CachedTokens = min(dd.CachedTokens, out.PromptTokens)
		out.PromptTokensDetails = &dd
	}
	return &out
}

func (s *Stream) originalPrompt() int {
	if len(s.progress.PromptIDs) > 0 {
		return len(s.progress.PromptIDs)
	}
	return s.promptTokens
}

// finish ends the client's stream with one [DONE]: the engine's, or the
// router's when the answer was whole but the replica failed before it.
func (s *Stream) finish() {
	if s.moves > 0 && s.hooks.Succeeded != nil {
		s.hooks.Succeeded()
	}
	s.out = append(s.out, "data: [DONE]\n\n"...)
	s.done = true
	_ = s.body.Close()
}

// fail handles the current replica's failure: the answer was whole (send
// the usage the client asked for, then [DONE]), or it continues on another
// replica, or it ends with an error event.
func (s *Stream) fail(cause error) {
	_ = s.body.Close()
	s.buf = s.buf[:0] // a partial event: the client never saw its tokens
	if s.finished {
		if s.plan.includeUsage && !s.usageSent {
			s.syntheticUsage()
		}
		s.finish()
		return
	}
	body, r := s.continuation()
	if r == nil {
		if s.hooks.Attempted != nil {
			s.hooks.Attempted(s.replica, len(s.progress.IDs))
		}
		s.failed = append(s.failed, s.replica)
		next, to, err := s.re.Reissue(s.ctx, body, s.failed)
		if err == nil {
			if s.hooks.Migrated != nil {
				s.hooks.Migrated(s.replica, to, len(s.progress.IDs))
			}
			s.moves++
			s.body, s.replica, s.carried = next, to, len(s.progress.IDs)
			return
		}
		if s.ctx.Err() != nil { // the client left while the continuation was sent
			s.done = true
			return
		}
		r = &Refusal{ReasonNoReplica, "no other replica took the continuation: " + err.Error()}
	}
	if s.hooks.Refused != nil {
		s.hooks.Refused(s.replica, r.Reason, cause)
	}
	msg := fmt.Sprintf("replica %s failed mid-stream: %v; not migrated: %s", s.replica, cause, r.Detail)
	s.out = append(append(append(s.out, "data: "...), openai.ErrorBody(http.StatusBadGateway, msg)...), "\n\ndata: [DONE]\n\n"...)
	s.done = true
}

// continuation builds the next replica's request, or says why there is none.
func (s *Stream) continuation() ([]byte, *Refusal) {
	switch {
	case s.refuse == ReasonToolCalls:
		return nil, &Refusal{s.refuse, "the answer holds a tool call, whose partial JSON cannot be continued"}
	case s.refuse == ReasonReasoning:
		return nil, &Refusal{s.refuse, "the answer holds reasoning text, which a continued message would lose"}
	case s.refuse == ReasonUnparsed:
		return nil, &Refusal{s.refuse, "the engine sent an event that is not a JSON chunk"}
	case s.refuse == ReasonNoTokenIDs:
		return nil, &Refusal{s.refuse, "the engine did not report its output's token ids (return_token_ids)"}
	case s.moves >= s.limits.MaxAttempts:
		return nil, &Refusal{ReasonAttempts, fmt.Sprintf("the stream already moved %d times (max_attempts)", s.moves)}
	case len(s.progress.IDs) > s.limits.MaxTokens:
		return nil, &Refusal{ReasonBudget, fmt.Sprintf("%d generated tokens exceed the migration budget of %d (max_tokens)", len(s.progress.IDs), s.limits.MaxTokens)}
	}
	s.progress.Text = s.text.String()
	return s.plan.Continue(s.progress)
}

// syntheticUsage sends the usage chunk of a whole answer whose replica
// failed before it could.
func (s *Stream) syntheticUsage() {
	object := "text_completion"
	if s.plan.kind == openai.Chat {
		object = "chat.completion.chunk"
	}
	p := s.originalPrompt()
	u := usage{PromptTokens: p, CompletionTokens: len(s.progress.IDs), TotalTokens: p + len(s.progress.IDs)}
	c := map[string]any{"object": object, "choices": []any{}, "usage": u}
	if s.head != nil {
		c["id"], c["created"], c["model"] = s.head.ID, s.head.Created, s.head.Model
	}
	b, _ := json.Marshal(c)
	s.out = append(append(append(s.out, "data: "...), b...), "\n\n"...)
}

// Replica is the replica streaming now.
func (s *Stream) Replica() string { return s.replica }
