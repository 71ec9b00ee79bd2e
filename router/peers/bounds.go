package peers

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkReplicaCount walks a message's JSON tokens without decoding it and
// refuses one whose replicas array has more than MaxReplicas entries.
// Decoding first would build every entry before the count is checked: a
// 1 MiB body of "{}," entries holds 350,000 of them, and decoding it
// allocates some 70 MB.
// Malformed JSON is left for Decode to name.
func checkReplicaCount(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	depth, n := 0, 0
	expectKey, inReplicas := false, false // expectKey: at depth 1, the next token is a key
	lastKey := ""
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		d, isDelim := tok.(json.Delim)
		if isDelim && (d == '}' || d == ']') {
			depth--
			if depth == 1 {
				inReplicas, expectKey = false, true
			}
			continue
		}
		if depth == 1 && expectKey {
			lastKey, _ = tok.(string)
			expectKey = false
			continue
		}
		if depth == 2 && inReplicas {
			if n++; n > MaxReplicas {
				return fmt.Errorf("peer load: more than %d replicas", MaxReplicas)
			}
		}
		switch {
		case isDelim:
			depth++
			expectKey = depth == 1
			inReplicas = inReplicas || depth == 2 && d == '[' && lastKey == "replicas"
		case depth == 1:
			expectKey = true
		}
	}
}
