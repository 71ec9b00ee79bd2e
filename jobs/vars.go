package jobs

import (
	"fmt"
	"regexp"
	"strings"
)

// varName is what HCL accepts as a variable's name.
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// VarFile turns name=value pairs, as `nomad job run -var` takes them, into
// the HCL variable file the agent's parse endpoint reads
// (JobsParseRequest.Variables). Every value is written as a string; Nomad
// converts it to the variable's declared type, as it does for -var. A later
// pair for the same name wins, as with Nomad's flag.
func VarFile(pairs []string) (string, error) {
	var b strings.Builder
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			return "", fmt.Errorf("-var %q: want name=value", p)
		}
		if !varName.MatchString(name) {
			return "", fmt.Errorf("-var %q: %q is not a variable name", p, name)
		}
		fmt.Fprintf(&b, "%s = %s\n", name, hclString(value))
	}
	return b.String(), nil
}

// hclString quotes s as an HCL string literal that stands for itself:
// quotes, backslashes and control characters escaped, and template
// sequences (${, %{) doubled so they are not interpolated.
func hclString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, c)
		case (c == '$' || c == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte(c)
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
