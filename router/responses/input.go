package responses

import (
	"encoding/json"
	"slices"
)

// parseInput reads input: a string is one user message item, a list is
// the items themselves, each checked as vLLM's ResponsesRequest validation
// checks the kinds this package converts. It returns the raw items and
// what was read from them.
func parseInput(raw json.RawMessage) ([]json.RawMessage, []item, error) {
	if isNull(raw) {
		return nil, nil, bad("input is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		msg, err := json.Marshal(struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content string `json:"content"`
		}{"message", "user", text})
		if err != nil {
			return nil, nil, bad("input: %v", err)
		}
		it, err := readItem(msg, 0)
		return []json.RawMessage{msg}, []item{it}, err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, nil, bad("input must be a string or an array of input items")
	}
	items := make([]item, len(raws))
	for i, r := range raws {
		it, err := readItem(r, i)
		if err != nil {
			return nil, nil, err
		}
		items[i] = it
	}
	return raws, items, nil
}

// item is one input item with the fields the conversion reads.
type item struct {
	Type      string
	Role      string
	Status    string
	Content   json.RawMessage
	Summary   json.RawMessage
	Name      string
	Namespace string
	Arguments string
	CallID    string
	Output    json.RawMessage
	raw       json.RawMessage
}

// typedItem is an item's fields as the conversion reads them; a null
// string is absent.
type typedItem struct {
	Type      *string         `json:"type"`
	Role      *string         `json:"role"`
	Status    *string         `json:"status"`
	Name      *string         `json:"name"`
	Namespace *string         `json:"namespace"`
	Arguments *string         `json:"arguments"`
	CallID    *string         `json:"call_id"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	Output    json.RawMessage `json:"output"`
}

// stringFields are the item fields that must be strings when given.
var stringFields = []string{"type", "role", "status", "name", "namespace", "arguments", "call_id"}

// messageRoles are the roles of OpenAI's EasyInputMessage and of the
// Message and ResponseOutputMessage items.
var messageRoles = []string{"user", "assistant", "system", "developer"}

// readItem reads input item i: a message (type "message" or none),
// function_call, function_call_output or reasoning. vLLM's pydantic union
// accepts other item kinds (web search calls, item references...) but its
// conversion hands them to the chat template unchanged, which cannot render
// them, so they are refused here, naming the field.
func readItem(raw json.RawMessage, i int) (item, error) {
	var r typedItem
	if err := json.Unmarshal(raw, &r); err != nil {
		return item{}, itemError(raw, i)
	}
	it := item{raw: raw, Content: r.Content, Summary: r.Summary, Output: r.Output,
		Type: deref(r.Type), Role: deref(r.Role), Status: deref(r.Status), Name: deref(r.Name),
		Namespace: deref(r.Namespace), Arguments: deref(r.Arguments), CallID: deref(r.CallID)}
	switch it.Type {
	case "", "message":
		return it, checkMessage(it, i)
	case "function_call":
		return it, require(i, []string{"call_id", "name", "arguments"}, r.CallID, r.Name, r.Arguments)
	case "function_call_output":
		if err := require(i, []string{"call_id"}, r.CallID); err != nil {
			return item{}, err
		}
		return it, checkOutput(r.Output, i)
	case "reasoning":
		return it, checkReasoning(it, i)
	}
	return item{}, bad("input[%d].type: item type %q is not supported", i, it.Type)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// itemError names what makes item i unreadable: not an object, or a
// string field that is not a string.
func itemError(raw json.RawMessage, i int) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return bad("input[%d] must be an object", i)
	}
	for _, name := range stringFields {
		var s string
		if v := fields[name]; !isNull(v) && json.Unmarshal(v, &s) != nil {
			return bad("%s must be a string", fieldName(i, name))
		}
	}
	return bad("input[%d] must be an object", i)
}

func fieldName(i int, field string) string { return "input[" + itoa(i) + "]." + field }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// require refuses an item missing one of the named string fields.
func require(i int, names []string, values ...*string) error {
	for k, v := range values {
		if v == nil {
			return bad("%s is required", fieldName(i, names[k]))
		}
	}
	return nil
}

func checkMessage(it item, i int) error {
	if it.Role == "" {
		return bad("%s is required", fieldName(i, "role"))
	}
	if !slices.Contains(messageRoles, it.Role) {
		return bad("%s: %q is not one of %v", fieldName(i, "role"), it.Role, messageRoles)
	}
	if isNull(it.Content) {
		return bad("%s is required", fieldName(i, "content"))
	}
	if !isStringOrList(it.Content) {
		return bad("%s must be a string or an array of content parts", fieldName(i, "content"))
	}
	return nil
}

func checkOutput(raw json.RawMessage, i int) error {
	if isNull(raw) {
		return bad("%s is required", fieldName(i, "output"))
	}
	if !isStringOrList(raw) {
		return bad("%s must be a string or an array of content parts", fieldName(i, "output"))
	}
	return nil
}

func checkReasoning(it item, i int) error {
	if isNull(it.Summary) {
		return bad("%s is required", fieldName(i, "summary"))
	}
	if !isNull(it.Content) && !isList(it.Content) {
		return bad("%s must be an array", fieldName(i, "content"))
	}
	if !isNull(it.Summary) && !isList(it.Summary) {
		return bad("%s must be an array", fieldName(i, "summary"))
	}
	return nil
}

func isStringOrList(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil || isList(raw)
}

func isList(raw json.RawMessage) bool {
	var l []json.RawMessage
	return json.Unmarshal(raw, &l) == nil
}
