package kvwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Send posts u to the router at baseURL (e.g. http://10.0.0.7:8080). It
// returns nil on acceptance, an error wrapping ErrSnapshotRequired,
// ErrUnauthorized or ErrMalformed for the protocol's answers, and any other
// error for transport failures and server errors (worth a retry). An update
// applied but for replicas the router had no room for returns a
// *RefusedError (wrapping ErrRefused): the session goes on.
func Send(ctx context.Context, c *http.Client, baseURL, token string, u *Update) error {
	body, err := Encode(u)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(baseURL, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("kv update request: %w", err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("send kv update: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb errorBody
	if json.Unmarshal(msg, &eb) == nil && eb.Error != "" {
		msg = []byte(eb.Error)
	}
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusOK:
		return parseRefused(msg)
	case http.StatusConflict:
		return fmt.Errorf("%w (router: %s)", ErrSnapshotRequired, msg)
	case http.StatusUnauthorized:
		return fmt.Errorf("%w (router: %s)", ErrUnauthorized, msg)
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%w (router: %s)", ErrMalformed, msg)
	}
	return fmt.Errorf("send kv update: %s: %s", resp.Status, msg)
}
