// OpenAI's Node client (openai): models, chat completions, and the
// Responses API, plain, streamed, chained with previous_response_id across
// two routers, then retrieved and deleted.
import OpenAI from 'openai';
import { apiKey, chatModel, routerA, routerB, run, statusOf, timeoutMs } from './harness.mjs';

const client = (base) => new OpenAI({ baseURL: `${base}/v1`, apiKey: apiKey(), maxRetries: 0, timeout: timeoutMs });
const a = client(routerA());
const b = client(routerB());

// outputText is the answer's text; the client adds output_text to whole
// responses only, not to those a stream's events carry.
const outputText = (r) =>
  r.output_text ??
  r.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .filter((part) => part.type === 'output_text')
    .map((part) => part.text)
    .join('');

// turn is what a check reports of one Responses answer.
const turn = (via, r) => ({
  via,
  id: r.id,
  status: r.status,
  previous_response_id: r.previous_response_id ?? null,
  text: outputText(r),
  input_tokens: r.usage?.input_tokens,
  output_tokens: r.usage?.output_tokens,
});

await run({
  models: async () => {
    const ids = [];
    for await (const m of a.models.list()) {
      ids.push(m.id);
    }
    return { ids };
  },

  chat: async () => {
    const r = await a.chat.completions.create({
      model: chatModel(),
      messages: [{ role: 'user', content: 'Name three colours of the rainbow.' }],
      max_tokens: 16,
    });
    return {
      id: r.id,
      text: r.choices[0]?.message?.content,
      finish_reason: r.choices[0]?.finish_reason,
      input_tokens: r.usage?.prompt_tokens,
      output_tokens: r.usage?.completion_tokens,
    };
  },

  'chat.stream': async () => {
    const stream = await a.chat.completions.create({
      model: chatModel(),
      messages: [{ role: 'user', content: 'Count from one to five in words.' }],
      max_tokens: 16,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage;
    let id;
    for await (const chunk of stream) {
      id ??= chunk.id;
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) {
        text += delta;
        chunks++;
      }
      usage = chunk.usage ?? usage;
    }
    return { id, text, chunks, input_tokens: usage?.prompt_tokens, output_tokens: usage?.completion_tokens };
  },

  responses: async () => {
    const r = await a.responses.create({ model: chatModel(), input: 'Name three colours of the rainbow.', max_output_tokens: 16 });
    return turn('A', r);
  },

  'responses.stream': async () => {
    const stream = await a.responses.create({
      model: chatModel(),
      input: 'Count from one to five in words.',
      max_output_tokens: 16,
      stream: true,
    });
    let text = '';
    let deltas = 0;
    const types = [];
    let completed;
    for await (const ev of stream) {
      if (!types.includes(ev.type)) {
        types.push(ev.type);
      }
      if (ev.type === 'response.output_text.delta') {
        text += ev.delta;
        deltas++;
      }
      // vLLM ends a response cut at max_output_tokens as incomplete.
      if (ev.type === 'response.completed' || ev.type === 'response.incomplete') {
        completed = ev.response;
      }
    }
    return { text, deltas, types, final: completed ? turn('A', completed) : null };
  },

  // Three turns, each continuing the one before by previous_response_id:
  // A, then B (which must find A's response), then A again.
  'responses.chain': async () => {
    const turns = [];
    let prev;
    const steps = [
      ['A', a, 'My name is Ada and my favourite colour is teal.'],
      ['B', b, 'What is my favourite colour?'],
      ['A', a, 'And what is my name?'],
    ];
    for (const [via, c, input] of steps) {
      const r = await c.responses.create({
        model: chatModel(),
        input,
        max_output_tokens: 12,
        ...(prev ? { previous_response_id: prev } : {}),
      });
      turns.push(turn(via, r));
      prev = r.id;
    }
    return { turns };
  },

  // A stored response is retrieved through the other router, deleted,
  // and then gone.
  'responses.retrieve_delete': async () => {
    const created = await a.responses.create({ model: chatModel(), input: 'Say something brief.', max_output_tokens: 8 });
    const viaB = await b.responses.retrieve(created.id);
    const viaA = await a.responses.retrieve(created.id);
    await a.responses.delete(created.id);
    const afterDelete = await statusOf(a.responses.retrieve(created.id));
    return { created: turn('A', created), retrieved_b: turn('B', viaB), retrieved_a: turn('A', viaA), after_delete_status: afterDelete };
  },
});
