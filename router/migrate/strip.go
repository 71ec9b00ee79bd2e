package migrate

import "bytes"

// dropKeys returns the JSON text data without the members named keys, in
// objects at any depth, and without the commas that separated them; the
// rest is left byte for byte. data must be valid JSON (Stream has decoded
// it already); a key is compared as written, escapes included. It costs a
// copy, where decoding and re-encoding a chunk costs a dozen allocations.
func dropKeys(data []byte, keys ...string) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		if data[i] != '"' {
			out = append(out, data[i])
			i++
			continue
		}
		end := stringEnd(data, i)
		colon := skipSpace(data, end)
		if colon < len(data) && data[colon] == ':' && isOneOf(data[i+1:end-1], keys) {
			vEnd := valueEnd(data, skipSpace(data, colon+1))
			if next := skipSpace(data, vEnd); next < len(data) && data[next] == ',' {
				i = next + 1 // the member and the comma after it
				continue
			}
			// The object's last member: drop the comma before it.
			if t := bytes.TrimRight(out, " \t\r\n"); len(t) > 0 && t[len(t)-1] == ',' {
				out = t[:len(t)-1]
			}
			i = vEnd
			continue
		}
		out = append(out, data[i:end]...)
		i = end
	}
	return out
}

func isOneOf(name []byte, keys []string) bool {
	for _, k := range keys {
		if string(name) == k {
			return true
		}
	}
	return false
}

// stringEnd is the index after the string that starts at data[i] ('"').
func stringEnd(data []byte, i int) int {
	for k := i + 1; k < len(data); k++ {
		switch data[k] {
		case '\\':
			k++
		case '"':
			return k + 1
		}
	}
	return len(data)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// valueEnd is the index after the JSON value that starts at data[i].
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for k := i; k < len(data); k++ {
			switch data[k] {
			case '"':
				k = stringEnd(data, k) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return k + 1
				}
			}
		}
		return len(data)
	}
	k := i
	for k < len(data) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(data[k])) {
		k++
	}
	return k
}
