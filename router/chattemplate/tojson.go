package chattemplate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// The engine's own tojson differs from transformers' (json.dumps with
// ensure_ascii=False): with indent= it sorts keys and escapes HTML, floats
// lose their ".0" and U+2028 is escaped. Filters cannot be replaced in the
// engine, so Compile rewrites "EXPR | tojson(ARGS)" in the template source
// into a call of a global function, tojsonName(EXPR, ARGS), whenever EXPR is
// a plain name/attribute/subscript path (what chat templates use). Other
// uses keep the engine's filter.
const tojsonName = "__llmgw_tojson"

// rewriteTojson performs that source rewrite.
func rewriteTojson(src string) string {
	var out strings.Builder
	last := 0
	for i := 0; i < len(src); i++ {
		if src[i] != '|' {
			continue
		}
		j := skipSpace(src, i+1)
		if !strings.HasPrefix(src[j:], "tojson") || (j+6 < len(src) && isIdent(src[j+6])) {
			continue
		}
		argsEnd := j + 6
		args := ""
		if k := skipSpace(src, argsEnd); k < len(src) && src[k] == '(' {
			end := matchParen(src, k)
			if end < 0 {
				continue
			}
			args = strings.TrimSpace(src[k+1 : end])
			argsEnd = end + 1
		}
		opEnd := i
		for opEnd > last && (src[opEnd-1] == ' ' || src[opEnd-1] == '\t') {
			opEnd--
		}
		opStart := operandStart(src, last, opEnd)
		if opStart < 0 {
			continue
		}
		out.WriteString(src[last:opStart])
		out.WriteString(tojsonName + "(" + src[opStart:opEnd])
		if args != "" {
			out.WriteString(", " + args)
		}
		out.WriteString(")")
		last = argsEnd
		i = argsEnd - 1
	}
	out.WriteString(src[last:])
	return out.String()
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return i
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// matchParen returns the index of the parenthesis closing the one at open,
// skipping string literals, or -1.
func matchParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			k := strings.IndexByte(s[i+1:], c)
			if k < 0 {
				return -1
			}
			i += k + 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		case '%', '}':
			if i+1 < len(s) && (s[i+1] == '}') {
				return -1 // the tag ended first
			}
		}
	}
	return -1
}

// operandStart walks back from end over a name/attribute/subscript path
// (subscripts holding only literals or names) and returns where it starts,
// or -1 when the operand is anything else.
func operandStart(s string, min, end int) int {
	i := end
	for i > min {
		c := s[i-1]
		switch {
		case isIdent(c) || c == '.':
			i--
		case c == ']':
			k := strings.LastIndexByte(s[min:i-1], '[')
			if k < 0 {
				return -1
			}
			inner := s[min+k+1 : i-1]
			if strings.ContainsAny(inner, "[]()|{}%") {
				return -1
			}
			i = min + k
		default:
			goto done
		}
	}
done:
	if i == end || !isIdent(s[i]) || (s[i] >= '0' && s[i] <= '9') {
		return -1
	}
	// The path must not continue something that binds tighter.
	if i > min {
		switch s[i-1] {
		case ')', ']', '\'', '"', '.':
			return -1
		}
	}
	return i
}

// tojson is transformers' tojson filter: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False) by default.
func tojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("tojson: missing value")
	}
	o := jsonOpts{item: ", ", key: ": "}
	if v, ok := kwargs["ensure_ascii"]; ok {
		o.ascii = v.IsTruthy()
	}
	if v, ok := kwargs["sort_keys"]; ok {
		o.sortKeys = v.IsTruthy()
	}
	if v, ok := kwargs["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			o.indent = strings.Repeat(" ", int(max(0, min(v.AsInt(), 64))))
		case v.IsString():
			o.indent = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an int or a string")
		}
		o.indented, o.item = true, ","
	}
	if v, ok := kwargs["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings")
		}
		o.item, o.key = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	var sb strings.Builder
	if err := o.encode(&sb, args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(sb.String()), nil
}

type jsonOpts struct {
	item, key, indent string
	indented, ascii   bool
	sortKeys          bool
}

func (o *jsonOpts) newline(sb *strings.Builder, depth int) {
	if o.indented {
		sb.WriteByte('\n')
		for range depth {
			sb.WriteString(o.indent)
		}
	}
}

func (o *jsonOpts) encode(sb *strings.Builder, v jinja.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("tojson: value nested deeper than %d", maxDepth)
	}
	switch {
	case v.IsNone(), v.IsUndefined(), v.IsCallable():
		sb.WriteString("null")
	case v.IsBool():
		sb.WriteString(map[bool]string{true: "true", false: "false"}[v.AsBool()])
	case v.IsInt():
		sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		sb.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		o.str(sb, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				sb.WriteString(o.item)
			}
			o.newline(sb, depth+1)
			if err := o.encode(sb, it, depth+1); err != nil {
				return err
			}
		}
		o.newline(sb, depth)
		sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.Keys
		if len(keys) == 0 {
			sb.WriteString("{}")
			return nil
		}
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(o.item)
			}
			o.newline(sb, depth+1)
			o.str(sb, k)
			sb.WriteString(o.key)
			if err := o.encode(sb, d.Data[k], depth+1); err != nil {
				return err
			}
		}
		o.newline(sb, depth)
		sb.WriteByte('}')
	default:
		sb.WriteString("null")
	}
	return nil
}

// str writes a JSON string as Python's json module does.
func (o *jsonOpts) str(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (o.ascii && r > 0x7f && r < 0x10000):
				fmt.Fprintf(sb, `\u%04x`, r)
			case o.ascii && r >= 0x10000:
				r -= 0x10000
				fmt.Fprintf(sb, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			default:
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
}

// pyFloat formats a float as Python's repr does: the shortest digits that
// round-trip, fixed notation for decimal exponents in [-4, 16), otherwise
// scientific with a signed two-digit exponent; json.dumps writes NaN and
// Infinity for the special values.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // e.g. -1.2345e+06
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	var s string
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
			} else {
				s = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			s = "0." + strings.Repeat("0", -exp-1) + digits
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		s = fmt.Sprintf("%se%s%02d", m, sign, exp)
	}
	if neg {
		s = "-" + s
	}
	return s
}
