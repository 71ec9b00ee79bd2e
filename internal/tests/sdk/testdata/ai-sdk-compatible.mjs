// The Vercel AI SDK (ai) with its OpenAI-compatible provider
// (@ai-sdk/openai-compatible), the one it documents for vLLM: chat
// completions (/v1/chat/completions), plain and streamed.
import { generateText, streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { apiKey, chatModel, routerA, run, timeoutMs } from './harness.mjs';

const provider = createOpenAICompatible({
  name: 'llmgw',
  baseURL: `${routerA()}/v1`,
  apiKey: apiKey(),
  includeUsage: true,
  fetch: (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
});

await run({
  // generateText over chat completions.
  chat: async () => {
    const r = await generateText({
      model: provider.chatModel(chatModel()),
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

  // streamText over chat completions, with the usage chunk.
  'chat.stream': async () => {
    let failure;
    const r = streamText({
      model: provider.chatModel(chatModel()),
      prompt: 'Count from one to five in words.',
      maxOutputTokens: 16,
      maxRetries: 0,
      onError: ({ error }) => {
        failure = error;
      },
    });
    let text = '';
    let chunks = 0;
    for await (const delta of r.textStream) {
      text += delta;
      chunks++;
    }
    if (failure) {
      throw failure;
    }
    const usage = await r.usage;
    const response = await r.response;
    return { text, chunks, id: response.id, input_tokens: usage.inputTokens, output_tokens: usage.outputTokens };
  },
});
