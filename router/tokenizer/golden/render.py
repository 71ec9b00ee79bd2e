#!/usr/bin/python3
"""render.py TESTDATA OUT_DIR: golden chat-template renders from Jinja2.

Renders every chat template (the ollama-utils set in TESTDATA/templates.json
plus the templates in TESTDATA/models/*/tokenizer_config.json) with every
conversation of OUT_DIR/conversations.json, the way vLLM does: its message
normalisation first, then Hugging Face transformers' apply_chat_template
Jinja2 setup. Writes OUT_DIR/renders.json.gz. Uses Debian's python3-jinja2.
"""
import datetime
import gzip
import json
import os
import re
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# strftime_now is pinned so the goldens do not depend on the day they ran.
FIXED_NOW = datetime.datetime(2026, 7, 26, 12, 0, 0)
MODEL_TEMPLATES = ["llama3", "llama3_1", "qwen3", "gemma3", "deepseek_v3"]
# Special tokens given to the ollama-utils templates (they come without a
# tokenizer_config.json).
DEFAULT_SPECIALS = {"bos_token": "<|bos|>", "eos_token": "<|eos|>"}
SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


class AssistantTracker(Extension):
    """transformers' {% generation %} block: renders its body unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def make_env():
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


# Content format: vLLM passes list-style content through to templates that
# loop over message content ("openai" format) and joins the text parts with a
# newline for the others ("string" format). Both sides use this detection.
OPENAI_FORMAT = re.compile(r"for\s+\w+\s+in\s+\w+(\[\s*['\"]content['\"]\s*\]|\.content)")


def content_format(template):
    return "openai" if OPENAI_FORMAT.search(template) else "string"


def normalise(conv, fmt):
    """vLLM's request normalisation, before the template sees anything."""
    msgs = []
    for m in conv["messages"]:
        out = {"role": m["role"]}
        content = m.get("content")
        if isinstance(content, list):
            texts = [p["text"] for p in content if p.get("type") == "text"]
            out["content"] = [{"type": "text", "text": t} for t in texts] if fmt == "openai" else "\n".join(texts)
        elif content is None:
            out["content"] = [] if fmt == "openai" else ""
        else:
            out["content"] = content
        if "name" in m:
            out["name"] = m["name"]
        if "tool_calls" in m:
            calls = []
            for c in m["tool_calls"]:
                c = json.loads(json.dumps(c))
                args = c.get("function", {}).get("arguments")
                if isinstance(args, str):
                    c["function"]["arguments"] = json.loads(args)
                calls.append(c)
            out["tool_calls"] = calls
        if "tool_call_id" in m:
            out["tool_call_id"] = m["tool_call_id"]
        msgs.append(out)
    tools = None
    if conv.get("tools"):
        tools = [{"type": t.get("type", "function"),
                  "function": {"name": t["function"]["name"],
                               "description": t["function"].get("description"),
                               "parameters": t["function"].get("parameters")}}
                 for t in conv["tools"]]
    return msgs, tools


def render(env, template, specials, conv):
    fmt = content_format(template)
    msgs, tools = normalise(conv, fmt)
    gen = conv.get("add_generation_prompt", True)
    cont = conv.get("continue_final_message", False)
    if gen and cont:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    kwargs = dict(specials)
    kwargs.update(conv.get("chat_template_kwargs") or {})
    out = env.from_string(template).render(messages=msgs, tools=tools, documents=None,
                                           add_generation_prompt=gen, **kwargs)
    if cont:
        final = msgs[-1]["content"]
        if isinstance(final, list):
            final = next(p["text"] for p in reversed(final) if "text" in p)
        if final.strip() not in out:
            raise ValueError("continue_final_message: final message not in rendered chat")
        loc = out.rindex(final.strip())
        if out[loc:loc + len(final.lstrip())] == final:
            out = out[:loc + len(final.lstrip())]
        else:
            out = out[:loc + len(final.strip())]
    return out


def main():
    testdata, out_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(out_dir, "conversations.json")) as f:
        convs = json.load(f)
    with open(os.path.join(testdata, "templates.json")) as f:
        templates = [(name, tmpl, DEFAULT_SPECIALS) for name, tmpl in json.load(f).items()]
    for m in MODEL_TEMPLATES:
        with open(os.path.join(testdata, "models", m, "tokenizer_config.json")) as f:
            cfg = json.load(f)
        specials = {}
        for k in SPECIAL_KEYS:
            v = cfg.get(k)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                specials[k] = v
        templates.append(("model/" + m, cfg["chat_template"], specials))
    env = make_env()
    cases, ok = [], 0
    for name, tmpl, specials in templates:
        for conv in convs:
            case = {"template": name, "conversation": conv["name"]}
            try:
                case["text"] = render(env, tmpl, specials, conv)
                ok += 1
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                case["error"] = "%s: %s" % (type(e).__name__, e)
            cases.append(case)
    body = json.dumps({"oracle": "Jinja2 " + jinja2.__version__, "fixed_now": FIXED_NOW.isoformat(),
                       "default_specials": DEFAULT_SPECIALS, "cases": cases}, ensure_ascii=False)
    # mtime=0 keeps the file byte-identical when nothing changed.
    with open(os.path.join(out_dir, "renders.json.gz"), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(body.encode("utf-8"))
    print("render.py: %d templates x %d conversations: %d rendered, %d raised" %
          (len(templates), len(convs), ok, len(cases) - ok))


if __name__ == "__main__":
    main()
