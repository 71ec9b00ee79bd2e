package gateway

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/openai"
)

// MaxSessionIDBytes caps a session id. The session scorer remembers every
// id it sees (up to its max_sessions), so an uncapped header would let a
// client park megabytes per request in the router.
const MaxSessionIDBytes = 128

// sessionID reads the session header, answering 400 itself when the id is
// over MaxSessionIDBytes.
func (g *Gateway) sessionID(c *gin.Context) (string, bool) {
	id := c.GetHeader(g.d.Options.SessionHeader)
	if len(id) > MaxSessionIDBytes {
		openai.WriteError(c.Writer, http.StatusBadRequest, fmt.Sprintf("header %s has %d bytes; a session id may have at most %d", g.d.Options.SessionHeader, len(id), MaxSessionIDBytes))
		return "", false
	}
	return id, true
}
