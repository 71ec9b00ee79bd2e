// The harness every SDK script shares: settings from the environment, and
// one JSON line per check on stdout, {"check", "ok", "detail"}, for the Go
// test (internal/tests/sdk) to assert on. The checks to run are the
// script's arguments, so the test runs only those whose endpoints the
// router and vllm-sim serve. A check that throws prints ok: false with the
// error, the others still run, and the script exits 1.

// setting reads a required environment variable.
export function setting(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
}

// The routers' base URLs (http://host:port), the client key and the
// models, as the Go test passes them.
export const routerA = () => setting('SDK_ROUTER_A');
export const routerB = () => setting('SDK_ROUTER_B');
export const apiKey = () => setting('SDK_API_KEY');
export const chatModel = () => setting('SDK_CHAT_MODEL');
export const embedModel = () => setting('SDK_EMBED_MODEL');

// Every client gives up after this long and never retries: a failure
// shows at once, as itself.
export const timeoutMs = 30000;

// errorDetail keeps what a client error says: its stack, its cause (a
// connection error's reason) and its HTTP status, if any.
function errorDetail(err) {
  return {
    error: String(err?.stack ?? err),
    cause: err?.cause === undefined ? undefined : String(err.cause?.stack ?? err.cause),
    status: err?.status,
  };
}

// run runs the checks named on the command line, in order.
export async function run(checks) {
  const names = process.argv.slice(2);
  let failed = false;
  for (const name of names) {
    const check = checks[name];
    if (!check) {
      console.log(JSON.stringify({ check: name, ok: false, detail: { error: `no check ${name}; have ${Object.keys(checks).join(', ')}` } }));
      failed = true;
      continue;
    }
    try {
      const detail = await check();
      console.log(JSON.stringify({ check: name, ok: true, detail }));
    } catch (err) {
      console.log(JSON.stringify({ check: name, ok: false, detail: errorDetail(err) }));
      failed = true;
    }
  }
  process.exitCode = failed ? 1 : 0;
}

// statusOf awaits p and returns the HTTP status of the error it throws,
// or 200 when it succeeds.
export async function statusOf(p) {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err && typeof err.status === 'number') {
      return err.status;
    }
    throw err;
  }
}

// streamCount streams a short count with the AI SDK's streamText (passed
// in: this file imports no SDK) on model, and returns the text, the
// number of text chunks, the response id and the usage; an error the
// stream reported is thrown.
export async function streamCount(streamText, model) {
  let failure;
  const r = streamText({
    model,
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
}
