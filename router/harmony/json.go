package harmony

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// node is a JSON value that keeps its objects' key order, as the library's
// serde_json (feature preserve_order) does: a tool schema's properties
// render in the order the client sent them.
type node struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str  string
	num  string
	b    bool
	keys []string
	vals []*node
	arr  []*node
}

// parseJSON decodes raw; nil when it is not valid JSON.
func parseJSON(raw []byte) *node {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil
	}
	if _, err := dec.Token(); err == nil {
		return nil // trailing data
	}
	return n
}

func decodeNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			n := &node{kind: 'o'}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeNode(dec)
				if err != nil {
					return nil, err
				}
				n.set(k.(string), v)
			}
			_, err := dec.Token()
			return n, err
		}
		n := &node{kind: 'a'}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, v)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'n', num: string(t)}, nil
	case bool:
		return &node{kind: 'b', b: t}, nil
	default:
		return &node{kind: 'z'}, nil
	}
}

// set stores v under k; a repeated key keeps its first place and takes the
// last value, as serde_json's IndexMap does.
func (n *node) set(k string, v *node) {
	for i, have := range n.keys {
		if have == k {
			n.vals[i] = v
			return
		}
	}
	n.keys = append(n.keys, k)
	n.vals = append(n.vals, v)
}

// get returns the member k of an object; nil otherwise.
func (n *node) get(k string) *node {
	if n == nil || n.kind != 'o' {
		return nil
	}
	for i, have := range n.keys {
		if have == k {
			return n.vals[i]
		}
	}
	return nil
}

// asStr returns a string value.
func (n *node) asStr() (string, bool) {
	if n == nil || n.kind != 's' {
		return "", false
	}
	return n.str, true
}

// String writes n as serde_json's compact Display does.
func (n *node) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *node) write(b *strings.Builder) {
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, v := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	case 's':
		writeJSONString(b, n.str)
	case 'n':
		b.WriteString(formatNumber(n.num))
	case 'b':
		b.WriteString(strconv.FormatBool(n.b))
	default:
		b.WriteString("null")
	}
}

// writeJSONString escapes as serde_json: quote, backslash and control
// characters only; everything else, non-ASCII included, as is.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&0xf])
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// formatNumber prints a JSON number as serde_json prints the value it
// parsed: integers as written, floats as Rust's ryu shortest form ("1.0",
// "1e20", "1e-7").
func formatNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if _, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return lit
		}
		if _, err := strconv.ParseUint(lit, 10, 64); err == nil {
			return lit
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return lit
	}
	return ryu(f)
}

// ryu formats a finite float as the ryu crate's Buffer::format_finite.
func ryu(f float64) string {
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	if f == 0 {
		return sign + "0.0"
	}
	// Shortest digits d1d2...dn and exponent: f = 0.d1...dn * 10^k.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := exp + 1 // decimal point position after k digits
	n := len(digits)
	switch {
	case 0 <= exp && k <= 16:
		if n <= k {
			return sign + digits + strings.Repeat("0", k-n) + ".0"
		}
		return sign + digits[:k] + "." + digits[k:]
	case -5 < k && k <= 0:
		return sign + "0." + strings.Repeat("0", -k) + digits
	case n == 1:
		return sign + digits + "e" + strconv.Itoa(exp)
	default:
		return sign + digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(exp)
	}
}
