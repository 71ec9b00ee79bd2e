package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/tenant"
)

// DefaultPoll is how often a Store checks its keys file for a change.
const DefaultPoll = 2 * time.Second

// Options configure a Store.
type Options struct {
	// Keys is the plain list, each key its own tenant.
	Keys []string
	// File is the keys file's path; empty for none.
	File string
	// Poll is how often the file is checked for a change (default
	// DefaultPoll).
	Poll   time.Duration
	Logger hclog.Logger
}

// Store holds the current Table and reloads it from the keys file.
type Store struct {
	opts Options
	cur  atomic.Pointer[Table]

	mu      sync.Mutex // one reload at a time
	fileSum [sha256.Size]byte
	fileErr error // why the content of fileSum was rejected; nil when loaded
	logged  string
	reloads atomic.Uint64
}

// Open builds the first Table; unlike a reload, a bad list or file here
// is an error, so a router never starts with keys other than intended.
func Open(opts Options) (*Store, error) {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	s := &Store{opts: opts}
	if _, err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Enabled reports whether any key is configured: without one the gateway
// serves every client as tenant.Anonymous.
func (s *Store) Enabled() bool {
	return s != nil && (len(s.opts.Keys) > 0 || s.opts.File != "")
}

// Table returns the current table.
func (s *Store) Table() *Table { return s.cur.Load() }

// Authenticate returns the tenant of key in the current table.
func (s *Store) Authenticate(key string) (*tenant.Tenant, bool) { return s.cur.Load().Lookup(key) }

// Reloads counts the tables swapped in after the first.
func (s *Store) Reloads() uint64 { return s.reloads.Load() }

// Reload rereads the keys file and swaps in the new table if the file
// changed; on an error the current table stays and the error (naming the
// problem, never a key) is logged and returned.
func (s *Store) Reload() error {
	changed, err := s.load()
	switch {
	case err != nil:
		s.mu.Lock()
		if msg := err.Error(); msg != s.logged {
			s.logged = msg
			s.opts.Logger.Error("keys file rejected; the previous keys stay in force", "file", s.opts.File, "error", err)
		}
		s.mu.Unlock()
	case changed:
		t := s.Table()
		s.opts.Logger.Info("keys file reloaded", "file", s.opts.File, "tenants", len(t.Tenants()), "keys", t.Keys())
	}
	return err
}

// load builds a table from the list and the file when the file's content
// differs from the last one loaded, and swaps it in.
func (s *Store) load() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var src []byte
	if s.opts.File != "" {
		var err error
		if src, err = readBounded(s.opts.File); err != nil {
			return false, err
		}
		sum := sha256.Sum256(src)
		if s.cur.Load() != nil && sum == s.fileSum {
			return false, s.fileErr
		}
		s.fileSum = sum
	} else if s.cur.Load() != nil {
		return false, nil
	}
	t := newTable()
	if s.opts.File != "" {
		// A rejected content keeps its sum: polls skip it until it changes.
		if err := t.addFile(src); err != nil {
			s.fileErr = fmt.Errorf("%s: %w", s.opts.File, err)
			return false, s.fileErr
		}
	}
	if err := t.addList(s.opts.Keys); err != nil {
		s.fileErr = err
		return false, err
	}
	if s.cur.Swap(t) != nil {
		s.reloads.Add(1)
	}
	s.fileErr, s.logged = nil, ""
	return true, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	if b.Len() > MaxFileBytes {
		return nil, fmt.Errorf("keys file %s: larger than %d bytes", path, MaxFileBytes)
	}
	return b.Bytes(), nil
}

// Run reloads on every signal from reload (e.g. SIGHUP, forwarded by the
// caller) and whenever a poll sees the file changed, until ctx ends.
func (s *Store) Run(ctx context.Context, reload <-chan struct{}) {
	if s.opts.File == "" {
		return
	}
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
		case <-t.C:
		}
		_ = s.Reload() // logged
	}
}
