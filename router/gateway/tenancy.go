package gateway

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tenant"
)

// Authenticator resolves an API key to its tenant (auth.Store).
type Authenticator interface {
	Authenticate(key string) (*tenant.Tenant, bool)
}

// authenticate resolves the request's bearer key to its tenant and puts
// the tenant in the request context, or answers 401 as OpenAI does. With
// no Authenticator every request is tenant.Anonymous.
func (g *Gateway) authenticate(c *gin.Context) {
	if g.d.Auth == nil {
		return
	}
	key, ok := bearer(c.GetHeader("Authorization"))
	if !ok {
		// Anthropic's SDKs and Claude Code send the key in x-api-key.
		key = strings.TrimSpace(c.GetHeader(HeaderAPIKey))
		ok = key != ""
	}
	if !ok {
		g.unauthorized(c, "You didn't provide an API key. Send it in an Authorization header using Bearer auth (Authorization: Bearer YOUR_KEY), or in an x-api-key header.")
		return
	}
	t, ok := g.d.Auth.Authenticate(key)
	if !ok {
		g.unauthorized(c, "Incorrect API key provided.") // never repeat the key
		return
	}
	c.Request = c.Request.WithContext(tenant.NewContext(c.Request.Context(), t))
}

func (g *Gateway) unauthorized(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", `Bearer realm="llmgw"`)
	openai.WriteErrorCode(c.Writer, http.StatusUnauthorized, openai.TypeInvalidRequest, openai.CodeInvalidAPIKey, msg)
	g.d.Metrics.Requests.WithLabelValues(endpointOf(c.Request.URL.Path), "401").Inc()
	c.Abort()
}

func endpointOf(path string) string {
	switch path {
	case "/v1/chat/completions":
		return "chat"
	case "/v1/completions":
		return "completions"
	case "/tokenize", "/detokenize", "/version":
		return path[1:]
	case "/v1/messages":
		return "messages"
	case "/v1/messages/count_tokens":
		return "count_tokens"
	}
	if strings.HasPrefix(path, "/v1/responses") {
		return "responses"
	}
	for _, r := range poolingRoutes {
		if r.path == path {
			return r.endpoint
		}
	}
	return "models"
}

// HeaderAPIKey is Anthropic's API key header, accepted on every path
// when there is no Authorization header.
const HeaderAPIKey = "X-Api-Key"

// bearer reads "Bearer <key>", the scheme in any case.
func bearer(h string) (string, bool) {
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	return key, key != ""
}

// writeErr answers a refused request in OpenAI's shape, with its
// Retry-After (whole seconds, at least 1) and rate-limit headers.
func writeErr(w http.ResponseWriter, e *route.Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(e.RetryAfter.Seconds())))))
	}
	if e.Limit != nil {
		e.Limit.SetHeaders(w.Header())
	}
	if e.Code != "" {
		openai.WriteErrorCode(w, e.Status, e.Type, e.Code, e.Message)
		return
	}
	openai.WriteError(w, e.Status, e.Message)
}

// proxyLimited proxies a routed request with its rate-limit headers and,
// for a tenant with limits, corrects the request's token charge from the
// response's usage once it has ended (a failed answer used none). It
// returns the status the client got.
func (g *Gateway) proxyLimited(w gin.ResponseWriter, r *http.Request, proxy http.Handler, p *route.Plan) int {
	if p.Grant == nil {
		proxy.ServeHTTP(w, r)
		return w.Status()
	}
	p.Limits.SetHeaders(w.Header())
	uw := &usageWriter{ResponseWriter: w}
	used := int64(-1) // the estimate stands unless the response says otherwise
	// Deferred: a stream the proxy aborts (http.ErrAbortHandler) must
	// still release its hold.
	defer func() {
		p.Grant.Finish(used)
		uw.release()
	}()
	proxy.ServeHTTP(uw, r)
	status := w.Status()
	if used = 0; status < http.StatusBadRequest {
		used = usedTokens(uw.tail) // -1 when it has none
	}
	return status
}
