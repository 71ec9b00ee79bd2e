package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// vLLM's bridge writes two strings with Python's own printers: a tool_use
// block's input as json.dumps prints it (the call's arguments), and an
// assistant's tool_result content as str() prints it. This file mirrors
// both on JSON values decoded in their key order.

// object is a JSON object that keeps its key order, as Python dicts do.
type object []member

type member struct {
	key string
	val any
}

// MarshalJSON writes the members in order, without HTML escaping.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping: the bodies it builds are
// read back as JSON, and plain text is easier to read in logs and tests.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeOrdered decodes raw JSON into nil, bool, string, json.Number, []any
// and object values.
func decodeOrdered(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := object{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			o = append(o, member{k.(string), v})
		}
		_, err := d.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token()
		return a, err
	}
	return t, nil
}

// pyDumps prints v as Python's json.dumps does by default: ", " and ": "
// separators, non-ASCII escaped.
func pyDumps(b *strings.Builder, v any) { jsonDumps.print(b, v) }

// pyRepr prints v as Python's str() prints the value json.loads returns:
// dicts and lists with their items' repr, True/False/None.
func pyRepr(b *strings.Builder, v any) { strOf.print(b, v) }

// pyPrinter is how one of Python's printers writes the scalars; both
// write lists and dicts alike, with ", " and ": " between items.
type pyPrinter struct {
	null, yes, no string
	jsonNumbers   bool // json.dumps' spelling of floats, not repr's
	str           func(*strings.Builder, string)
}

var (
	jsonDumps = pyPrinter{null: "null", yes: "true", no: "false", jsonNumbers: true, str: asciiJSONString}
	strOf     = pyPrinter{null: "None", yes: "True", no: "False", str: reprString}
)

func (p pyPrinter) print(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString(p.null)
	case bool:
		if v {
			b.WriteString(p.yes)
		} else {
			b.WriteString(p.no)
		}
	case json.Number:
		b.WriteString(pyNumber(v, p.jsonNumbers))
	case string:
		p.str(b, v)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			p.print(b, e)
		}
		b.WriteByte(']')
	case object:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			p.str(b, m.key)
			b.WriteString(": ")
			p.print(b, m.val)
		}
		b.WriteByte('}')
	}
}

// pyNumber prints a JSON number as Python prints what json.loads makes of
// it: an int as written, a float by float.__repr__ (shortest round trip,
// scientific below 1e-4 and from 1e16). Overflowing floats are infinite:
// "Infinity" for json.dumps, "inf" for repr.
func pyNumber(n json.Number, dumps bool) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return "0"
		}
		return s
	}
	f, _ := strconv.ParseFloat(s, 64)
	if math.IsInf(f, 0) {
		inf := map[bool]string{true: "Infinity", false: "inf"}[dumps]
		if f < 0 {
			return "-" + inf
		}
		return inf
	}
	if f == 0 {
		return map[bool]string{true: "-0.0", false: "0.0"}[math.Signbit(f)]
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	if exp, _ := strconv.Atoi(sci[strings.IndexByte(sci, 'e')+1:]); exp < -4 || exp >= 16 {
		return sci
	}
	fixed := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(fixed, ".") {
		fixed += ".0"
	}
	return fixed
}

// asciiJSONString writes s as json.dumps does with ensure_ascii.
func asciiJSONString(b *strings.Builder, s string) {
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
			switch {
			case r < 0x20 || (r > 0x7e && r <= 0xffff):
				fmt.Fprintf(b, `\u%04x`, r)
			case r > 0xffff:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// reprString writes s as Python's repr does: single quotes unless s holds
// a single quote and no double one; backslash, the quote, \t \n \r and
// unprintable characters escaped.
func reprString(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
}
