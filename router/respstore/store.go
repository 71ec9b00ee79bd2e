package respstore

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults for Options' zero values: a conversation costs a few KiB to
// a few hundred KiB, so 256 MiB keeps thousands of agent sessions, and
// an agent's turns are seconds to minutes apart.
const (
	DefaultMaxBytes      = 256 << 20
	DefaultTTL           = time.Hour
	DefaultMaxEntryBytes = 8 << 20
)

// ErrTooLarge is an entry over Options.MaxEntryBytes; it is not kept.
var ErrTooLarge = errors.New("respstore: conversation is over the size limit")

// Entry is one stored response.
type Entry struct {
	// Tenant is the name of the key's tenant that created it ("" without
	// keys); only the same tenant reads, continues or deletes it.
	Tenant string `json:"tenant"`
	Model  string `json:"model"`
	// Items is what a continuation's input starts with: the turn's whole
	// input (history included) then the response's output items.
	Items []json.RawMessage `json:"items"`
	// Response is the response object's JSON.
	Response json.RawMessage `json:"response"`
	Created  time.Time       `json:"created"`
}

// size is what e counts against the store's bound: its bytes, not
// Go's overhead, which is a small constant per item.
func (e *Entry) size() int64 {
	n := int64(len(e.Tenant) + len(e.Model) + len(e.Response) + 64)
	for _, it := range e.Items {
		n += int64(len(it)) + 24
	}
	return n
}

// Options bound a Store; zero values take the defaults.
type Options struct {
	MaxBytes      int64
	TTL           time.Duration
	MaxEntryBytes int64
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.MaxEntryBytes <= 0 || o.MaxEntryBytes > o.MaxBytes {
		o.MaxEntryBytes = min(DefaultMaxEntryBytes, o.MaxBytes)
	}
	return o
}

// Store is a router's own responses, least recently used first out.
type Store struct {
	opts Options
	now  func() time.Time

	mu    sync.Mutex
	byID  map[string]*list.Element // of *stored
	lru   list.List                // front: most recently used
	bytes int64
	stats Stats
}

type stored struct {
	id    string
	entry Entry
	size  int64
}

// Stats are the store's counts, for metrics.
type Stats struct {
	Entries, Bytes int64
	// Evicted counts entries dropped for room, Expired those past the TTL.
	Evicted, Expired uint64
}

// New returns an empty store.
func New(opts Options) *Store {
	return &Store{opts: opts.withDefaults(), now: time.Now, byID: map[string]*list.Element{}}
}

// Options returns the store's bounds, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// Put keeps e under id, replacing what id held, and evicts the least
// recently used entries while the store is over its bound.
func (s *Store) Put(id string, e Entry) error {
	size := e.size()
	if size > s.opts.MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, s.opts.MaxEntryBytes)
	}
	if e.Created.IsZero() {
		e.Created = s.now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[id]; ok {
		s.remove(el)
	}
	s.byID[id] = s.lru.PushFront(&stored{id: id, entry: e, size: size})
	s.bytes += size
	for s.bytes > s.opts.MaxBytes {
		s.remove(s.lru.Back())
		s.stats.Evicted++
	}
	return nil
}

// Get returns id's entry when tenant owns it and it has not expired.
func (s *Store) Get(id, tenant string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.live(id, tenant)
	if el == nil {
		return Entry{}, false
	}
	s.lru.MoveToFront(el)
	return el.Value.(*stored).entry, true
}

// Delete drops id's entry when tenant owns it, and reports whether it did.
func (s *Store) Delete(id, tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.live(id, tenant)
	if el != nil {
		s.remove(el)
	}
	return el != nil
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Entries, st.Bytes = int64(len(s.byID)), s.bytes
	return st
}

// Sweep drops every expired entry; Get drops them too, so this only
// bounds how long an unread one holds memory.
func (s *Store) Sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.now().Add(-s.opts.TTL)
	for el := s.lru.Back(); el != nil; {
		prev := el.Prev()
		if el.Value.(*stored).entry.Created.Before(cutoff) {
			s.remove(el)
			s.stats.Expired++
		}
		el = prev
	}
}

// live returns id's element if tenant owns it and it is within the TTL;
// an expired one is dropped. Called with s.mu held.
func (s *Store) live(id, tenant string) *list.Element {
	el, ok := s.byID[id]
	if !ok {
		return nil
	}
	st := el.Value.(*stored)
	if st.entry.Created.Before(s.now().Add(-s.opts.TTL)) {
		s.remove(el)
		s.stats.Expired++
		return nil
	}
	if st.entry.Tenant != tenant {
		return nil
	}
	return el
}

func (s *Store) remove(el *list.Element) {
	st := s.lru.Remove(el).(*stored)
	delete(s.byID, st.id)
	s.bytes -= st.size
}
