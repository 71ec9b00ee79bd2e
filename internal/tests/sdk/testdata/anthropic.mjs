// Anthropic's Node client (@anthropic-ai/sdk) against the Messages API
// (/v1/messages): plain, streamed, a tool-use round trip, and
// count_tokens. The key travels in x-api-key, as the client sends it.
import Anthropic from '@anthropic-ai/sdk';
import { apiKey, chatModel, routerA, run, timeoutMs } from './harness.mjs';

const client = new Anthropic({ baseURL: routerA(), apiKey: apiKey(), maxRetries: 0, timeout: timeoutMs });

// message is what a check reports of one Messages answer.
const message = (m) => ({
  id: m.id,
  type: m.type,
  role: m.role,
  stop_reason: m.stop_reason,
  block_types: m.content.map((b) => b.type),
  text: m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
  input_tokens: m.usage?.input_tokens,
  output_tokens: m.usage?.output_tokens,
});

const system = 'You answer in one short sentence.';
const question = [{ role: 'user', content: 'Name three colours of the rainbow.' }];

const weather = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

await run({
  messages: async () => {
    const m = await client.messages.create({ model: chatModel(), max_tokens: 16, system, messages: question });
    return message(m);
  },

  'messages.stream': async () => {
    const stream = client.messages.stream({
      model: chatModel(),
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Count from one to five in words.' }],
    });
    let text = '';
    let deltas = 0;
    stream.on('text', (t) => {
      text += t;
      deltas++;
    });
    const final = await stream.finalMessage();
    return { text, deltas, final: message(final) };
  },

  // The model is asked for a tool call; the conversation then goes on
  // with that call (or, when the answer holds none, one written here, as
  // a client replaying a history would) and its tool_result.
  'messages.tools': async () => {
    const ask = { role: 'user', content: 'What is the weather in Paris?' };
    const first = await client.messages.create({
      model: chatModel(),
      max_tokens: 32,
      tools: [weather],
      tool_choice: { type: 'tool', name: weather.name },
      messages: [ask],
    });
    const call = first.content.find((b) => b.type === 'tool_use');
    const use = call ?? { type: 'tool_use', id: 'toolu_sdk_test_1', name: weather.name, input: { city: 'Paris' } };
    const second = await client.messages.create({
      model: chatModel(),
      max_tokens: 16,
      tools: [weather],
      messages: [
        ask,
        { role: 'assistant', content: [{ type: 'tool_use', id: use.id, name: use.name, input: use.input }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny and 21 degrees.' }] },
      ],
    });
    return { first: message(first), model_called_tool: Boolean(call), second: message(second) };
  },

  // count_tokens counts the prompt messages.create is charged for.
  'messages.count_tokens': async () => {
    const counted = await client.messages.countTokens({ model: chatModel(), system, messages: question });
    const created = await client.messages.create({ model: chatModel(), max_tokens: 4, system, messages: question });
    return { count: counted.input_tokens, create_input_tokens: created.usage.input_tokens };
  },
});
