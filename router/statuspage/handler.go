package statuspage

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// MaxRefresh bounds ?refresh=, in seconds.
const MaxRefresh = 3600

// Handler serves the page for GET and HEAD. ?refresh=N (1..MaxRefresh
// seconds) adds a meta refresh; anything else there is a 400 that says
// what is allowed. The page is rendered into a buffer first, so a template
// error is a clean 500, not half a page.
func Handler(f Fleet, r Router, d Decisions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the status page answers GET", http.StatusMethodNotAllowed)
			return
		}
		refresh, err := parseRefresh(req.URL.Query().Get("refresh"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var buf bytes.Buffer
		if err := Render(&buf, Build(time.Now(), refresh, f, r, d)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		// Nothing on the page loads from elsewhere or runs: say so to the
		// browser, so injected markup could not either.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(buf.Bytes())
	})
}

func parseRefresh(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxRefresh {
		return 0, fmt.Errorf("refresh: want whole seconds from 1 to %d", MaxRefresh) // the value is not echoed: it is the client's
	}
	return n, nil
}
