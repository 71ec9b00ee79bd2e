// LangChain's OpenAI chat model (@langchain/openai ChatOpenAI), plain
// (chat completions) and with useResponsesApi (/v1/responses).
import { ChatOpenAI } from '@langchain/openai';
import { apiKey, chatModel, routerA, run, timeoutMs } from './harness.mjs';

const model = (useResponsesApi) =>
  new ChatOpenAI({
    model: chatModel(),
    apiKey: apiKey(),
    configuration: { baseURL: `${routerA()}/v1` },
    maxTokens: 16,
    maxRetries: 0,
    timeout: timeoutMs,
    useResponsesApi,
  });

// answer is what a check reports of one AIMessage.
const answer = (m) => ({
  id: m.id ?? m.response_metadata?.id,
  text: m.text,
  input_tokens: m.usage_metadata?.input_tokens,
  output_tokens: m.usage_metadata?.output_tokens,
});

await run({
  chat: async () => answer(await model(false).invoke('Name three colours of the rainbow.')),
  responses: async () => answer(await model(true).invoke('Name three colours of the rainbow.')),
});
