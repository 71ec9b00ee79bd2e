package kvwire

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Sink applies accepted updates. The Receiver calls it in each driver's
// sequence order, one update at a time.
type Sink interface {
	ApplyUpdate(u *Update)
}

// Receiver is the receiving half of the protocol: it authenticates,
// decodes, sequences per driver session, and hands accepted updates to a
// Sink. Safe for concurrent use; wrap it (it is an http.Handler) in the
// router's ingest route.
type Receiver struct {
	token []byte
	sink  Sink

	mu      sync.Mutex
	drivers map[string]*sessionPos
	expired uint64 // sessions Expire dropped
}

type sessionPos struct {
	epoch    uint64
	seq      uint64
	lastSeen time.Time
}

// NewReceiver returns a Receiver accepting updates that carry token.
func NewReceiver(token string, sink Sink) (*Receiver, error) {
	if token == "" {
		return nil, errors.New("kv receiver: empty shared token")
	}
	if sink == nil {
		return nil, errors.New("kv receiver: nil sink")
	}
	return &Receiver{token: []byte(token), sink: sink, drivers: map[string]*sessionPos{}}, nil
}

// Receive processes one request: the Authorization header value and the
// body. It returns nil when the update was applied (or was a repeat of the
// last one), or an error wrapping ErrUnauthorized, ErrMalformed or
// ErrSnapshotRequired.
func (r *Receiver) Receive(authorization string, body []byte) error {
	_, err := r.receive(authorization, body)
	return err
}

// receive is Receive, also returning the replicas a RefusingSink refused.
func (r *Receiver) receive(authorization string, body []byte) ([]Refusal, error) {
	if !r.authorized(authorization) {
		return nil, ErrUnauthorized
	}
	u, err := Decode(body)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resyncLocked()
	pos := r.drivers[u.Driver]
	if !u.Snapshot {
		switch {
		case pos == nil:
			return nil, fmt.Errorf("%w: no session for driver %q", ErrSnapshotRequired, u.Driver)
		case pos.epoch != u.Epoch:
			return nil, fmt.Errorf("%w: driver %q epoch %d, expected %d", ErrSnapshotRequired, u.Driver, u.Epoch, pos.epoch)
		case u.Seq == pos.seq:
			pos.lastSeen = time.Now()
			return nil, nil // a retry of the update already applied
		case u.Seq != pos.seq+1:
			return nil, fmt.Errorf("%w: driver %q seq %d after %d", ErrSnapshotRequired, u.Driver, u.Seq, pos.seq)
		}
	} else if pos != nil && pos.epoch == u.Epoch && pos.seq == u.Seq {
		pos.lastSeen = time.Now()
		return nil, nil // a retried snapshot
	}
	var refused []Refusal
	if rs, ok := r.sink.(RefusingSink); ok {
		refused = rs.ApplyRefusing(u)
	} else {
		r.sink.ApplyUpdate(u)
	}
	r.drivers[u.Driver] = &sessionPos{epoch: u.Epoch, seq: u.Seq, lastSeen: time.Now()}
	r.resyncLocked()
	return refused, nil
}

// resyncLocked drops the sessions a Resyncer sink asks to restart.
func (r *Receiver) resyncLocked() {
	if rs, ok := r.sink.(Resyncer); ok {
		for _, d := range rs.TakeResyncs() {
			delete(r.drivers, d)
		}
	}
}

// authorized reports whether an Authorization header value carries the
// token, in time independent of the guess.
func (r *Receiver) authorized(authorization string) bool {
	tok, ok := strings.CutPrefix(authorization, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), r.token) == 1
}

// Expire forgets every driver last heard from before cutoff and tells the
// Sink it holds nothing, as an empty snapshot from that driver. Drivers send
// at least every keep-alive interval (10 s by default), so a router calling
// Expire(time.Now().Add(-30*time.Second)) now and then drops the blocks of
// drivers that died without a word. It returns the expired driver ids.
func (r *Receiver) Expire(cutoff time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []string
	for id, pos := range r.drivers {
		if pos.lastSeen.Before(cutoff) {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	r.expired += uint64(len(gone))
	for _, id := range gone {
		delete(r.drivers, id)
		r.sink.ApplyUpdate(&Update{Version: Version, Driver: id, Snapshot: true})
	}
	return gone
}

// Forget drops a driver's session, e.g. after it stopped sending; its next
// delta will be asked for a snapshot. The Sink's state is the caller's.
func (r *Receiver) Forget(driver string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.drivers, driver)
}

// ServeHTTP answers POST requests at Path: 204 when accepted (200 with the
// refused replicas when a RefusingSink had no room for some), 401, 400, 409
// ("snapshot required"), 405 or 413 otherwise, with a JSON error body. The
// token is checked before a byte of the body is read, so a sender without
// it costs the router nothing but the headers; a body declared over
// MaxBody is refused unread too.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, errors.New("use POST"))
		return
	}
	if !r.authorized(req.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="llmgw-kv"`)
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusUnauthorized, ErrUnauthorized)
		return
	}
	if req.ContentLength > MaxBody {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes over %d", req.ContentLength, MaxBody))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", MaxBody))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Errorf("read body: %w", err))
		return
	}
	refused, err := r.receive(req.Header.Get("Authorization"), body)
	switch {
	case err == nil && len(refused) > 0:
		writeRefused(w, refused)
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrUnauthorized):
		w.Header().Set("WWW-Authenticate", `Bearer realm="llmgw-kv"`)
		writeError(w, http.StatusUnauthorized, err)
	case errors.Is(err, ErrSnapshotRequired):
		writeError(w, http.StatusConflict, err)
	default:
		writeError(w, http.StatusBadRequest, err)
	}
}

// errorBody is the JSON body of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: err.Error()})
}

// Interface guards.
var (
	_ http.Handler = (*Receiver)(nil)
	_ Sink         = (*Mirror)(nil)
)
