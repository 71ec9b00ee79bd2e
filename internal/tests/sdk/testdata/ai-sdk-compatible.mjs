// The Vercel AI SDK (ai) with its OpenAI-compatible provider
// (@ai-sdk/openai-compatible), the one it documents for vLLM: chat
// completions (/v1/chat/completions), plain and streamed.
import { generateText, streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { apiKey, chatModel, routerA, run, streamCount, timeoutMs } from './harness.mjs';

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
    return streamCount(streamText, provider.chatModel(chatModel()));
  },
});
