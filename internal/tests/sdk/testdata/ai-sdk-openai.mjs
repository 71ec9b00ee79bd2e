// The Vercel AI SDK (ai) with its OpenAI provider (@ai-sdk/openai), as an
// application uses it: openai(model) speaks the Responses API
// (/v1/responses), openai.embedding(model) /v1/embeddings.
import { embed, generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { apiKey, chatModel, embedModel, routerA, run, streamCount, timeoutMs } from './harness.mjs';

const openai = createOpenAI({
  baseURL: `${routerA()}/v1`,
  apiKey: apiKey(),
  fetch: (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
});

await run({
  // generateText: one Responses call, its text, id and usage.
  generate: async () => {
    const r = await generateText({
      model: openai(chatModel()),
      prompt: 'Name three colours of the rainbow.',
      maxOutputTokens: 16,
      maxRetries: 0,
    });
    return {
      text: r.text,
      id: r.response.id,
      finish_reason: r.finishReason,
      input_tokens: r.usage.inputTokens,
      output_tokens: r.usage.outputTokens,
    };
  },

  // streamText: the text as it streams, then the usage of the whole.
  stream: async () => {
    return streamCount(streamText, openai(chatModel()));
  },

  // embed: one vector from the embedding model.
  embed: async () => {
    const r = await embed({
      model: openai.embedding(embedModel()),
      value: 'The router keys each prompt by its cached prefix.',
      maxRetries: 0,
    });
    return { dimensions: r.embedding.length, tokens: r.usage.tokens, finite: r.embedding.every(Number.isFinite) };
  },
});
