package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/anthropic"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
)

// messageRoutes serves Anthropic's Messages API as vLLM does: the request
// is keyed by the chat request vLLM's bridge converts it to, and sent to
// the engine's own /v1/messages. Every answer the router makes on these
// paths is in Anthropic's error shape.
func (g *Gateway) messageRoutes(e *gin.Engine, proxy http.Handler) {
	dialect := errorDialect(anthropic.ErrorBody)
	e.POST("/v1/messages", dialect, g.authenticate, g.counted("messages", func(c *gin.Context) int { return g.createMessage(c, proxy) }))
	e.POST("/v1/messages/count_tokens", dialect, g.authenticate, g.utility("count_tokens", true, proxy))
}

func (g *Gateway) createMessage(c *gin.Context, proxy http.Handler) int {
	body, ok := g.readBody(c)
	if !ok {
		return c.Writer.Status()
	}
	req, err := anthropic.Parse(body)
	if err != nil {
		return badRequest(c, err)
	}
	chat, err := req.ChatBody()
	if err != nil {
		return badRequest(c, err)
	}
	return g.servePlanned(c, route.Input{Kind: openai.Chat, Body: chat, Forward: body}, proxy, messageErrorEvent)
}

// messageErrorEvent is the Messages API's error event, which ends a
// stream whose replica failed mid-way.
func messageErrorEvent(msg string) []byte {
	b, _ := json.Marshal(json.RawMessage(anthropic.ErrorBody(http.StatusBadGateway, msg)))
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}
