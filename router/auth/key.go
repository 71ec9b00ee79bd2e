package auth

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// KeyPrefix starts every key NewKey makes, so a leaked one is easy to
// recognise in a scan.
const KeyPrefix = "llmgw-"

// NewKey returns a new random API key: KeyPrefix and 32 random bytes in
// hex (256 bits, far beyond guessing, which is why a plain SHA-256 is a
// sound way to store it).
func NewKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new api key: %w", err)
	}
	return KeyPrefix + hex.EncodeToString(b), nil
}
