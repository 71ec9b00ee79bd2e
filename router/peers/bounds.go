package peers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// checkReplicaCount scans a message's bytes without decoding it and
// refuses one whose replicas array has more than MaxReplicas entries.
// Decoding first would build every entry before the count is checked: a
// 1 MiB body of "{}," entries holds 350,000 of them, and decoding it
// allocates some 70 MB. It counts the commas of the top-level "replicas"
// array (a valid array has one fewer than entries), skipping strings; the
// key matches as encoding/json matches it, case-insensitively. A scan of
// bytes, not json.Decoder.Token, since every peer message passes here:
// tokens cost more than decoding the message itself.
// Malformed JSON is left for Decode to name.
func checkReplicaCount(body []byte) error {
	depth, commas := 0, 0
	keyNext := false    // at depth 1, the next string is a key
	replicaKey := false // the last key at depth 1 was "replicas"
	inReplicas := false // inside that key's array, at depth 2
	empty := true       // the array has had no entry yet
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inReplicas && depth == 2 && empty && c > ' ' && c != ']' {
			empty = false
		}
		switch c {
		case '"':
			end := stringEnd(body, i)
			if depth == 1 && keyNext {
				replicaKey, keyNext = isReplicasKey(body[i:min(end+1, len(body))]), false
			}
			i = end
		case '{', '[':
			depth++
			switch {
			case depth == 1:
				keyNext = c == '{'
			case depth == 2 && c == '[' && replicaKey:
				inReplicas = true
			}
		case '}', ']':
			if depth == 2 {
				inReplicas = false
			}
			depth--
		case ',':
			switch {
			case depth == 1:
				keyNext, replicaKey = true, false
			case depth == 2 && inReplicas:
				commas++
			}
		}
		if !empty && commas+1 > MaxReplicas {
			return fmt.Errorf("peer load: more than %d replicas", MaxReplicas)
		}
	}
	return nil
}

// stringEnd is the index of the quote that closes the string opening at
// body[i], or the last index when it does not close.
func stringEnd(body []byte, i int) int {
	for j := i + 1; j < len(body); j++ {
		switch body[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(body) - 1
}

// isReplicasKey says whether the quoted key q names the replicas field as
// encoding/json reads it: escapes decoded, case folded.
func isReplicasKey(q []byte) bool {
	if bytes.IndexByte(q, '\\') < 0 {
		return len(q) == len(`"replicas"`) && strings.EqualFold(string(q[1:len(q)-1]), "replicas")
	}
	var k string
	return json.Unmarshal(q, &k) == nil && strings.EqualFold(k, "replicas")
}
