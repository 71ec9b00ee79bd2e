package chattemplate

import (
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// strftimeNow is transformers' strftime_now global: the current local time
// formatted with a Python (C library) strftime format.
func (t *Template) strftimeNow(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 || !args[0].IsString() {
		return jinja.Undefined(), fmt.Errorf("strftime_now: want one format string")
	}
	return jinja.NewString(strftime(args[0].AsString(), t.now())), nil
}

// strftime implements the common C strftime directives, including glibc's
// "-" flag (no padding), which Llama 3.x templates use.
func strftime(format string, tm time.Time) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			sb.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(n, width int) {
			if pad {
				fmt.Fprintf(&sb, "%0*d", width, n)
			} else {
				fmt.Fprintf(&sb, "%d", n)
			}
		}
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&sb, "%d", tm.Year())
		case 'y':
			num(tm.Year()%100, 2)
		case 'm':
			num(int(tm.Month()), 2)
		case 'd':
			num(tm.Day(), 2)
		case 'e':
			fmt.Fprintf(&sb, "%2d", tm.Day())
		case 'H':
			num(tm.Hour(), 2)
		case 'I':
			num((tm.Hour()+11)%12+1, 2)
		case 'M':
			num(tm.Minute(), 2)
		case 'S':
			num(tm.Second(), 2)
		case 'j':
			num(tm.YearDay(), 3)
		case 'p':
			sb.WriteString(map[bool]string{true: "PM", false: "AM"}[tm.Hour() >= 12])
		case 'b', 'h':
			sb.WriteString(tm.Month().String()[:3])
		case 'B':
			sb.WriteString(tm.Month().String())
		case 'a':
			sb.WriteString(tm.Weekday().String()[:3])
		case 'A':
			sb.WriteString(tm.Weekday().String())
		case 'F':
			sb.WriteString(tm.Format("2006-01-02"))
		case 'T':
			sb.WriteString(tm.Format("15:04:05"))
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}
