package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The stream of a plain text model, as vLLM's responses_stream_generator
// and SimpleStreamingEventProcessor make it: response.created and
// response.in_progress with the in-progress response, then for the first
// non-empty text output_item.added and content_part.added, an
// output_text.delta per non-empty text delta, then output_text.done,
// content_part.done and output_item.done, and response.completed with the
// finished response, whatever its status. Each event goes out as
// "event: TYPE" and "data: JSON" lines, with sequence_number counting from
// 0; there is no [DONE].

type textPartEvent struct {
	ContentIndex int        `json:"content_index"`
	ItemID       string     `json:"item_id"`
	OutputIndex  int        `json:"output_index"`
	Part         outputText `json:"part"`
	Seq          int        `json:"sequence_number"`
	Type         string     `json:"type"`
}

type itemEvent struct {
	Item        outputMessage `json:"item"`
	OutputIndex int           `json:"output_index"`
	Seq         int           `json:"sequence_number"`
	Type        string        `json:"type"`
}

type textDeltaEvent struct {
	ContentIndex int    `json:"content_index"`
	Delta        string `json:"delta"`
	ItemID       string `json:"item_id"`
	Logprobs     []any  `json:"logprobs"`
	OutputIndex  int    `json:"output_index"`
	Seq          int    `json:"sequence_number"`
	Type         string `json:"type"`
}

type textDoneEvent struct {
	ContentIndex int    `json:"content_index"`
	ItemID       string `json:"item_id"`
	Logprobs     []any  `json:"logprobs"`
	OutputIndex  int    `json:"output_index"`
	Seq          int    `json:"sequence_number"`
	Text         string `json:"text"`
	Type         string `json:"type"`
}

type responseEvent struct {
	Response *responseObject `json:"response"`
	Seq      int             `json:"sequence_number"`
	Type     string          `json:"type"`
}

// eventStream numbers and writes a stream's events.
type eventStream struct {
	st  *sse
	seq int
}

func (es *eventStream) send(typ string, ev any) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	es.seq++
	if _, err := fmt.Fprintf(es.st.w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
		return err
	}
	if es.st.f != nil {
		es.st.f.Flush()
	}
	return nil
}

func (s *Server) streamResponse(w http.ResponseWriter, c *responsesCall, g *generation) {
	es := &eventStream{st: newSSE(w)}
	initial := s.responseObject(c, 0, nil, "")
	initial.Status = "in_progress"
	if es.send("response.created", responseEvent{initial, es.seq, "response.created"}) != nil ||
		es.send("response.in_progress", responseEvent{initial, es.seq, "response.in_progress"}) != nil {
		return
	}
	itemID := s.uuid()
	d := &detok{tok: s.tok}
	var res result
	var text string
	for t := range g.req.Out {
		if t.FinishReason == "abort" {
			return
		}
		res.ids, res.cached = append(res.ids, t.ID), t.CachedTokens
		if delta := d.next(t.ID); delta != "" {
			if text == "" && es.openText(itemID) != nil {
				return
			}
			text += delta
			if es.send("response.output_text.delta", textDeltaEvent{Delta: delta, ItemID: itemID, Logprobs: []any{}, Seq: es.seq, Type: "response.output_text.delta"}) != nil {
				return
			}
		}
		if t.Final {
			res.reason = t.FinishReason
			break
		}
	}
	if text != "" && es.closeText(itemID, text) != nil {
		return
	}
	final := s.store.complete(c, s.responseObject(c, g.prompt, &res, text))
	_ = es.send("response.completed", responseEvent{final, es.seq, "response.completed"})
}

// openText sends the events that open the answer's message and its text
// part.
func (es *eventStream) openText(itemID string) error {
	item := outputMessage{ID: itemID, Content: []outputText{}, Role: "assistant", Status: "in_progress", Type: "message"}
	if err := es.send("response.output_item.added", itemEvent{Item: item, Seq: es.seq, Type: "response.output_item.added"}); err != nil {
		return err
	}
	part := outputText{Annotations: []any{}, Text: "", Type: "output_text", Logprobs: []any{}}
	return es.send("response.content_part.added", textPartEvent{ItemID: itemID, Part: part, Seq: es.seq, Type: "response.content_part.added"})
}

// closeText sends the events that close them, with the whole text.
func (es *eventStream) closeText(itemID, text string) error {
	if err := es.send("response.output_text.done", textDoneEvent{ItemID: itemID, Logprobs: []any{}, Seq: es.seq, Text: text, Type: "response.output_text.done"}); err != nil {
		return err
	}
	part := outputText{Annotations: []any{}, Text: text, Type: "output_text"}
	if err := es.send("response.content_part.done", textPartEvent{ItemID: itemID, Part: part, Seq: es.seq, Type: "response.content_part.done"}); err != nil {
		return err
	}
	item := outputMessage{ID: itemID, Content: []outputText{part}, Role: "assistant", Status: "completed", Type: "message", Summary: json.RawMessage("[]")}
	return es.send("response.output_item.done", itemEvent{Item: item, Seq: es.seq, Type: "response.output_item.done"})
}
