package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/responses"
	"github.com/llmgw/llmgw/router/respstore"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tenant"
)

// Conversations keeps the Responses API's conversations for the fleet
// (respstore.Fleet): the router, not the engine, holds them, so a
// previous_response_id chain survives its turns reaching other routers
// and replicas.
type Conversations interface {
	NewID() string
	Save(id string, e respstore.Entry) error
	Load(ctx context.Context, id, tenant string) (respstore.Entry, error)
	Delete(ctx context.Context, id, tenant string) error
}

// localConversations is the store of a gateway given none: this
// router's own, with the default bounds, reachable from no other router.
func localConversations() Conversations {
	tag := respstore.TagOf(fmt.Sprintf("local/%d", time.Now().UnixNano()))
	return &respstore.Fleet{Local: respstore.New(respstore.Options{}), Self: func() respstore.Tag { return tag }}
}

// The OpenAI error codes of the Responses paths.
const (
	codePreviousNotFound = "previous_response_not_found"
)

func (g *Gateway) responseRoutes(e *gin.Engine, proxy http.Handler) {
	e.POST("/v1/responses", g.authenticate, g.counted("responses", func(c *gin.Context) int { return g.createResponse(c, proxy) }))
	e.GET("/v1/responses/:id", g.authenticate, g.counted("responses", g.getResponse))
	e.DELETE("/v1/responses/:id", g.authenticate, g.counted("responses", g.deleteResponse))
	e.POST("/v1/responses/:id/cancel", g.authenticate, g.counted("responses", g.cancelResponse))
}

// counted counts a handler's answer in llmgw_requests_total under
// endpoint.
func (g *Gateway) counted(endpoint string, h func(*gin.Context) int) gin.HandlerFunc {
	return func(c *gin.Context) {
		status := http.StatusOK // a stream the proxy aborts mid-way counts as sent
		defer func() { g.d.Metrics.Requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc() }()
		status = h(c)
	}
}

// createResponse routes POST /v1/responses. A continuation's history
// comes from the conversation store; the engine gets the whole input
// with store false and the router's response id as request_id, so it
// keeps nothing and names the response as the router does. The answer
// goes back with previous_response_id and store as the client sent them,
// and is kept in the store when the client asked (store defaults to
// true, as OpenAI's does).
func (g *Gateway) createResponse(c *gin.Context, proxy http.Handler) int {
	body, ok := g.readBody(c)
	if !ok {
		return c.Writer.Status()
	}
	req, err := responses.Parse(body)
	if err != nil {
		return badRequest(c, err)
	}
	if req.Background {
		return badRequest(c, errors.New("background responses are not supported: llmgw serves each response on the request that creates it"))
	}
	ten := tenant.FromContext(c.Request.Context())
	var history []json.RawMessage
	if req.PreviousResponseID != "" {
		e, st := g.loadResponse(c, req.PreviousResponseID, ten.Name, "previous_response_id")
		if st != 0 {
			return st
		}
		history = e.Items
	}
	id := g.conv.NewID()
	fwd, err := req.Stateless(history, id)
	if err != nil {
		return badRequest(c, err)
	}
	whole, err := responses.Parse(fwd)
	if err != nil {
		return badRequest(c, err)
	}
	chat, err := whole.ChatBody()
	if err != nil {
		return badRequest(c, err)
	}
	relay := newResponseRelay(c.Writer, respstore.DefaultMaxEntryBytes, req.PreviousResponseID, req.Store)
	c.Writer = relay
	status := g.servePlanned(c, route.Input{Kind: openai.Chat, Body: chat, Forward: fwd, Responses: true}, proxy, responseErrorEvent)
	relay.finish()
	if req.Store {
		g.keepResponse(id, ten.Name, whole, relay.result())
	}
	return status
}

// keepResponse stores a served response for its continuations.
func (g *Gateway) keepResponse(id, tenantName string, whole *responses.Request, res *responses.Result) {
	if res == nil {
		g.d.Metrics.ResponsesKept.WithLabelValues("not_kept").Inc()
		return
	}
	items := make([]json.RawMessage, 0, len(whole.Input)+len(res.Output))
	items = append(append(items, whole.Input...), res.Output...)
	err := g.conv.Save(id, respstore.Entry{Tenant: tenantName, Model: whole.Model, Items: items, Response: res.Body})
	switch {
	case errors.Is(err, respstore.ErrTooLarge):
		g.d.Metrics.ResponsesKept.WithLabelValues("too_large").Inc()
	case err != nil:
		g.d.Logger.Warn("could not keep a response", "id", id, "error", err)
		g.d.Metrics.ResponsesKept.WithLabelValues("not_kept").Inc()
	default:
		g.d.Metrics.ResponsesKept.WithLabelValues("kept").Inc()
	}
}

// loadResponse returns tenant's stored response id, or answers the
// client and returns the status it got. param names the request field
// that carried the id ("" for the path).
func (g *Gateway) loadResponse(c *gin.Context, id, tenantName, param string) (respstore.Entry, int) {
	e, err := g.conv.Load(c.Request.Context(), id, tenantName)
	switch {
	case err == nil:
		return e, 0
	case errors.Is(err, respstore.ErrNotFound) && param != "":
		openai.WriteErrorCode(c.Writer, http.StatusNotFound, openai.TypeInvalidRequest, codePreviousNotFound,
			fmt.Sprintf("Previous response with id '%s' not found.", id))
		return e, http.StatusNotFound
	case errors.Is(err, respstore.ErrNotFound):
		openai.WriteError(c.Writer, http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found.", id))
		return e, http.StatusNotFound
	default:
		g.d.Logger.Warn("could not load a response", "id", id, "error", err)
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, fmt.Sprintf("the router holding response '%s' did not answer; try again", id))
		return e, http.StatusServiceUnavailable
	}
}

func (g *Gateway) getResponse(c *gin.Context) int {
	e, st := g.loadResponse(c, c.Param("id"), tenant.FromContext(c.Request.Context()).Name, "")
	if st != 0 {
		return st
	}
	c.Data(http.StatusOK, "application/json", e.Response)
	return http.StatusOK
}

func (g *Gateway) deleteResponse(c *gin.Context) int {
	id := c.Param("id")
	err := g.conv.Delete(c.Request.Context(), id, tenant.FromContext(c.Request.Context()).Name)
	switch {
	case errors.Is(err, respstore.ErrNotFound):
		openai.WriteError(c.Writer, http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found.", id))
		return http.StatusNotFound
	case err != nil:
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, fmt.Sprintf("the router holding response '%s' did not answer; try again", id))
		return http.StatusServiceUnavailable
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response", "deleted": true})
	return http.StatusOK
}

// cancelResponse answers POST /v1/responses/{id}/cancel: only a
// background response can be cancelled, and llmgw serves none, so a
// known id gets OpenAI's answer for a response that is not one.
func (g *Gateway) cancelResponse(c *gin.Context) int {
	id := c.Param("id")
	if _, st := g.loadResponse(c, id, tenant.FromContext(c.Request.Context()).Name, ""); st != 0 {
		return st
	}
	openai.WriteError(c.Writer, http.StatusBadRequest, "Cannot cancel a synchronous response.")
	return http.StatusBadRequest
}

// responseErrorEvent is the Responses API's error event, which ends a
// stream whose replica failed mid-way.
func responseErrorEvent(msg string) []byte {
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}{"error", openai.TypeServer, msg, nil})
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}

func badRequest(c *gin.Context, err error) int {
	openai.WriteError(c.Writer, http.StatusBadRequest, err.Error())
	return http.StatusBadRequest
}
