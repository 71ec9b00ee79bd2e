package responses

import "testing"

// agentTurns is a four-turn agent request: instructions, tools, and a
// history of user turns, reasoning, tool calls and their outputs.
const agentTurns = `{"model":"m","instructions":"You are a careful agent. Use the tools when they help.","input":[` +
	`{"role":"user","content":"What is the weather in Paris and in Rome?"},` +
	`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Two cities, two calls."}]},` +
	`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\"}"},` +
	`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"get_weather","arguments":"{\"city\": \"Rome\"}"},` +
	`{"type":"function_call_output","call_id":"call_1","output":"18C, clear"},` +
	`{"type":"function_call_output","call_id":"call_2","output":"24C, sunny"},` +
	`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Paris is 18C and clear; Rome is 24C and sunny.","annotations":[]}]},` +
	`{"role":"user","content":[{"type":"input_text","text":"And tomorrow in Rome?"}]},` +
	`{"type":"function_call","id":"fc_3","call_id":"call_3","name":"get_forecast","arguments":"{\"city\": \"Rome\", \"days\": 1}"},` +
	`{"type":"function_call_output","call_id":"call_3","output":"26C, sunny"},` +
	`{"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Tomorrow Rome will be 26C and sunny.","annotations":[]}]},` +
	`{"role":"user","content":"Thanks. Book a table outside for two at eight."}],` +
	`"tools":[{"type":"function","name":"get_weather","description":"Current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true},` +
	`{"type":"function","name":"get_forecast","description":"Forecast for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]}},` +
	`{"type":"function","name":"book_table","description":"Book a restaurant table.","parameters":{"type":"object","properties":{"people":{"type":"integer"},"time":{"type":"string"}}}}],` +
	`"max_output_tokens":512,"stream":true}`

func BenchmarkChatBody(b *testing.B) {
	r, err := Parse([]byte(agentTurns))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ChatBody(); err != nil {
			b.Fatal(err)
		}
	}
}
