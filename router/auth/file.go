package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"

	"github.com/llmgw/llmgw/router/tenant"
)

// MaxFileBytes bounds the keys file.
const MaxFileBytes = 16 << 20

// minSaltSecret is the shortest salt_secret accepted.
const minSaltSecret = 32

// keysFile is the keys file's JSON.
type keysFile struct {
	// SaltSecret keys the HMAC that derives each isolated tenant's cache
	// salt from its name.
	SaltSecret string       `json:"salt_secret"`
	Tenants    []fileTenant `json:"tenants"`
}

type fileTenant struct {
	Name string `json:"name"`
	// KeysSHA256 are the hex SHA-256 hashes of the tenant's keys (several,
	// so that a key can be rotated without a gap).
	KeysSHA256 []string   `json:"keys_sha256"`
	Models     []string   `json:"models"`
	Priority   int        `json:"priority"`
	Weight     *float64   `json:"weight"`
	Isolated   bool       `json:"isolated"`
	Limits     fileLimits `json:"limits"`
}

type fileLimits struct {
	RequestsPerSecond float64 `json:"requests_per_second"`
	TokensPerMinute   int64   `json:"tokens_per_minute"`
	MaxConcurrent     int     `json:"max_concurrent"`
	MaxStreams        int     `json:"max_streams"`
}

var tenantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// MaxPriority bounds a tenant's priority to -MaxPriority..MaxPriority: the
// bands router/admission serves (a gateway test keeps the two equal), so a
// keys file cannot name a band that admission would silently clamp.
const MaxPriority = 10

// Bounds on what one tenant may say.
const (
	maxWeight = 1e6
	maxRate   = 1e9
	maxModels = 4096
)

// ParseFile reads a keys file: a JSON object, with no unknown fields and
// nothing after it, of this form:
//
//	{
//	  "salt_secret": "<at least 32 random characters; needed once a tenant is isolated>",
//	  "tenants": [
//	    {"name": "team-a",
//	     "keys_sha256": ["<sha256 hex of a key>", "..."],
//	     "models": ["llama-3-8b"],
//	     "priority": 1, "weight": 2, "isolated": true,
//	     "limits": {"requests_per_second": 5, "tokens_per_minute": 60000,
//	                "max_concurrent": 8, "max_streams": 4}}
//	  ]
//	}
//
// Every field but name and keys_sha256 may be left out: no models allows
// every model, a zero limit is none, weight defaults to 1. A tenant name
// is 1 to 128 letters, digits, '.', '_' or '-'. The error names the tenant
// and field at fault.
func ParseFile(src []byte) (*Table, error) {
	t := newTable()
	if err := t.addFile(src); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) addFile(src []byte) error {
	if len(src) > MaxFileBytes {
		return fmt.Errorf("keys file has %d bytes: at most %d", len(src), MaxFileBytes)
	}
	var f keysFile
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("keys file: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("keys file: data after the JSON object")
	}
	seen := map[string]bool{}
	for i, ft := range f.Tenants {
		where := fmt.Sprintf("keys file: tenants[%d]", i)
		if !tenantName.MatchString(ft.Name) {
			return fmt.Errorf("%s: name %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", where, ft.Name)
		}
		where += fmt.Sprintf(" (%s)", ft.Name)
		if seen[ft.Name] {
			return fmt.Errorf("%s: the name is used twice", where)
		}
		seen[ft.Name] = true
		ten, err := ft.tenant(f.SaltSecret)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if len(ft.KeysSHA256) == 0 {
			return fmt.Errorf("%s: keys_sha256 is empty, so no client could use the tenant", where)
		}
		for j, s := range ft.KeysSHA256 {
			h, err := ParseHash(s)
			if err != nil {
				return fmt.Errorf("%s: keys_sha256[%d]: %w", where, j, err)
			}
			if !t.add(h, ten) {
				return fmt.Errorf("%s: keys_sha256[%d]: this key already belongs to a tenant", where, j)
			}
		}
		t.tenants = append(t.tenants, ten)
	}
	return nil
}

func (ft *fileTenant) tenant(secret string) (*tenant.Tenant, error) {
	ten := &tenant.Tenant{Name: ft.Name, Priority: ft.Priority, Weight: 1, Isolated: ft.Isolated}
	if ft.Priority < -MaxPriority || ft.Priority > MaxPriority {
		return nil, fmt.Errorf("priority %d: want %d..%d", ft.Priority, -MaxPriority, MaxPriority)
	}
	if ft.Weight != nil {
		if w := *ft.Weight; !(w > 0 && w <= maxWeight) {
			return nil, fmt.Errorf("weight %v: want more than 0 and at most %g", w, float64(maxWeight))
		}
		ten.Weight = *ft.Weight
	}
	if len(ft.Models) > maxModels {
		return nil, fmt.Errorf("%d models: at most %d", len(ft.Models), maxModels)
	}
	for j, m := range ft.Models {
		if m == "" {
			return nil, fmt.Errorf("models[%d] is empty", j)
		}
	}
	ten.Models = ft.Models
	l := ft.Limits
	switch {
	case math.IsNaN(l.RequestsPerSecond) || l.RequestsPerSecond < 0 || l.RequestsPerSecond > maxRate:
		return nil, fmt.Errorf("limits.requests_per_second %v: want 0 (none) to %g", l.RequestsPerSecond, float64(maxRate))
	case l.TokensPerMinute < 0 || l.TokensPerMinute > maxRate:
		return nil, fmt.Errorf("limits.tokens_per_minute %d: want 0 (none) to %g", l.TokensPerMinute, float64(maxRate))
	case l.MaxConcurrent < 0 || l.MaxConcurrent > maxRate:
		return nil, fmt.Errorf("limits.max_concurrent %d: want 0 (none) or more", l.MaxConcurrent)
	case l.MaxStreams < 0 || l.MaxStreams > maxRate:
		return nil, fmt.Errorf("limits.max_streams %d: want 0 (none) or more", l.MaxStreams)
	}
	ten.Limits = tenant.Limits{RequestsPerSecond: l.RequestsPerSecond, TokensPerMinute: l.TokensPerMinute, MaxConcurrent: l.MaxConcurrent, MaxStreams: l.MaxStreams}
	if ft.Isolated {
		if len(secret) < minSaltSecret {
			return nil, fmt.Errorf("isolated needs the file's salt_secret, of at least %d characters (it has %d)", minSaltSecret, len(secret))
		}
		ten.CacheSalt = CacheSalt(secret, ft.Name)
	}
	return ten, nil
}

// CacheSalt derives an isolated tenant's cache salt: HMAC-SHA256 of its
// name keyed by the file's salt_secret, in hex. Every router reading the
// same file derives the same salt; a tenant that knows its own name but
// not the secret cannot compute another's.
func CacheSalt(secret, name string) string {
	return tenant.DeriveSalt(secret, name)
}
