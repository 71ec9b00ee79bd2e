package statuspage

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"
)

//go:embed page.html
var pageHTML string

// page is parsed once; a template error is a build error, caught by the
// tests, so Must is safe here.
var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": ago,
	"dur": func(d time.Duration) string { return d.Round(time.Microsecond).String() },
	"f1":  func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"pct": func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
}).Parse(pageHTML))

// Render writes p as HTML. html/template escapes every value by its
// context (text, attribute, URL), so replica ids, model names and driver
// ids that came from Consul or a driver cannot inject markup.
func Render(w io.Writer, p Page) error {
	if err := page.Execute(w, p); err != nil {
		return fmt.Errorf("render status page: %w", err)
	}
	return nil
}

// ago is how long before now t was, to the tenth of a second.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "n/a"
	}
	d := max(now.Sub(t), 0)
	if d >= time.Minute {
		d = d.Round(time.Second)
	} else {
		d = d.Round(100 * time.Millisecond)
	}
	return d.String() + " ago"
}
