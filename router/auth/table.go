package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/router/tenant"
)

// Hash is the SHA-256 of a key, the only form in which keys are held.
type Hash [sha256.Size]byte

// HashKey returns key's hash.
func HashKey(key string) Hash { return sha256.Sum256([]byte(key)) }

// String is the hash in lower-case hex, as the keys file holds it.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash reads a hash written as 64 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("want %d hex digits, got %d characters", 2*len(h), len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("not hex: %w", err)
	}
	return h, nil
}

// entry is one key's hash and its tenant.
type entry struct {
	hash   Hash
	tenant *tenant.Tenant
}

// Table maps key hashes to tenants. It is never changed once built, so it
// is safe for concurrent use.
type Table struct {
	// byPrefix indexes entries by their hash's first eight bytes; the rest
	// is compared in constant time.
	byPrefix map[uint64][]entry
	tenants  []*tenant.Tenant
}

func newTable() *Table { return &Table{byPrefix: map[uint64][]entry{}} }

// add maps h to t; false when h is there already.
func (t *Table) add(h Hash, ten *tenant.Tenant) bool {
	p := binary.LittleEndian.Uint64(h[:8])
	for _, e := range t.byPrefix[p] {
		if e.hash == h {
			return false
		}
	}
	t.byPrefix[p] = append(t.byPrefix[p], entry{h, ten})
	return true
}

// Lookup returns the tenant of key.
func (t *Table) Lookup(key string) (*tenant.Tenant, bool) {
	if t == nil {
		return nil, false
	}
	h := HashKey(key)
	var found *tenant.Tenant
	for _, e := range t.byPrefix[binary.LittleEndian.Uint64(h[:8])] {
		if subtle.ConstantTimeCompare(e.hash[:], h[:]) == 1 {
			found = e.tenant
		}
	}
	return found, found != nil
}

// Keys is how many keys the table holds.
func (t *Table) Keys() int {
	n := 0
	for _, es := range t.byPrefix {
		n += len(es)
	}
	return n
}

// Tenants lists the table's tenants in the order they were declared.
func (t *Table) Tenants() []*tenant.Tenant { return t.tenants }

// MinKeyLength is the shortest key the plain list accepts: shorter ones
// are too easy to guess for an unsalted hash to protect.
const MinKeyLength = 16

// maxKeyLength bounds a key: a bearer header of kilobytes is an attack,
// not a key.
const maxKeyLength = 512

// ListTenantName is the tenant name of a key from the plain list.
func ListTenantName(h Hash) string { return "key-" + h.String()[:12] }

// addList adds the plain-list keys, each as its own tenant.
func (t *Table) addList(keys []string) error {
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("api_keys[%d]: %w", i, err)
		}
		h := HashKey(k)
		ten := &tenant.Tenant{Name: ListTenantName(h), Weight: 1}
		if !t.add(h, ten) {
			return fmt.Errorf("api_keys[%d]: the same key is listed twice (or is also in the keys file)", i)
		}
		t.tenants = append(t.tenants, ten)
	}
	return nil
}

func checkKey(k string) error {
	switch {
	case len(k) < MinKeyLength:
		return fmt.Errorf("key has %d characters: at least %d are required", len(k), MinKeyLength)
	case len(k) > maxKeyLength:
		return fmt.Errorf("key has %d characters: at most %d are allowed", len(k), maxKeyLength)
	case strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f || r == ',' }):
		return fmt.Errorf("key contains a space, comma or control character")
	}
	return nil
}
