package respstore

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// PeerPath is where a router answers its peers for the responses it
// holds, on its ingest listener: GET and DELETE PeerPath+id?tenant=name,
// with the peers' bearer token. Answers: 200 with the entry's JSON (GET),
// 204 (DELETE), 404 unknown or another tenant's, 401 a wrong token.
const PeerPath = "/llmgw/v1/responses/"

// Errors Load and Delete return.
var (
	// ErrNotFound: no router holds the id for the tenant (never made,
	// expired, evicted, deleted, another tenant's, or its holder is gone).
	ErrNotFound = errors.New("respstore: no such response")
	// ErrUnreachable: the holder is listed but did not answer; the
	// client may retry.
	ErrUnreachable = errors.New("respstore: the router holding the response did not answer")
)

// Fleet is the fleet's responses as one router sees them: its own Store,
// and the other routers' through their ingest listeners.
type Fleet struct {
	Local *Store
	// Self returns this router's tag; it is known once the ingest
	// listener is open, so it is read on each use.
	Self func() Tag
	// Holder returns the ingest base URL (scheme://host:port) of the
	// listed router with that tag; nil or false when there is none.
	Holder func(Tag) (string, bool)
	Client *http.Client
	Token  string
}

// NewID returns a fresh id this router holds.
func (f *Fleet) NewID() string { return NewID(f.Self()) }

// Save keeps a response this router served.
func (f *Fleet) Save(id string, e Entry) error { return f.Local.Put(id, e) }

// Load returns tenant's response id from whichever router holds it.
func (f *Fleet) Load(ctx context.Context, id, tenant string) (Entry, error) {
	if e, ok := f.Local.Get(id, tenant); ok {
		return e, nil
	}
	resp, err := f.askHolder(ctx, http.MethodGet, id, tenant)
	if err != nil {
		return Entry{}, err
	}
	defer resp.Body.Close()
	var e Entry
	dec := json.NewDecoder(io.LimitReader(resp.Body, f.Local.opts.MaxEntryBytes+4096))
	if err := dec.Decode(&e); err != nil {
		return Entry{}, fmt.Errorf("%w: reading its answer: %v", ErrUnreachable, err)
	}
	if e.Tenant != tenant { // the holder checks too; never trust one check
		return Entry{}, ErrNotFound
	}
	return e, nil
}

// Delete drops tenant's response id wherever it is held.
func (f *Fleet) Delete(ctx context.Context, id, tenant string) error {
	if f.Local.Delete(id, tenant) {
		return nil
	}
	resp, err := f.askHolder(ctx, http.MethodDelete, id, tenant)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// askHolder sends method for id to the router that holds it, and returns
// its 2xx answer.
func (f *Fleet) askHolder(ctx context.Context, method, id, tenant string) (*http.Response, error) {
	tag, ok := HolderOf(id)
	if !ok || tag == f.Self() || f.Holder == nil || f.Token == "" {
		return nil, ErrNotFound
	}
	base, ok := f.Holder(tag)
	if !ok {
		return nil, ErrNotFound
	}
	req, err := http.NewRequestWithContext(ctx, method, base+PeerPath+id+"?tenant="+url.QueryEscape(tenant), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	req.Header.Set("Authorization", "Bearer "+f.Token)
	resp, err := f.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, ErrNotFound
	case resp.StatusCode/100 != 2:
		resp.Body.Close()
		return nil, fmt.Errorf("%w: it answered %s", ErrUnreachable, resp.Status)
	}
	return resp, nil
}

// Handler answers the peers at PeerPath.
func (f *Fleet) Handler() http.Handler {
	want := []byte("Bearer " + f.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.Token == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "missing or wrong token", http.StatusUnauthorized)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, PeerPath)
		tenant := r.URL.Query().Get("tenant")
		switch r.Method {
		case http.MethodGet:
			e, ok := f.Local.Get(id, tenant)
			if !ok {
				http.Error(w, "no such response", http.StatusNotFound)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&e)
		case http.MethodDelete:
			if !f.Local.Delete(id, tenant) {
				http.Error(w, "no such response", http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}
