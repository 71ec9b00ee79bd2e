#!/usr/bin/python3
"""render.py TESTDATA OUT_DIR: golden chat-template renders from Jinja2.

Renders every chat template (the ollama-utils set in TESTDATA/templates.json
plus the templates in TESTDATA/models/*/tokenizer_config.json) with every
conversation of OUT_DIR/conversations.json, the way vLLM does (the release
named in router/chattemplate/doc.go and docs/VLLM_PARITY.md): its content
format detection and message normalisation first, then Hugging Face
transformers' apply_chat_template Jinja2 setup. Writes OUT_DIR/renders.json.gz
with each template's detected content format. Uses Debian's python3-jinja2.
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


# Content format, as vLLM's renderers/hf.py _detect_content_format decides
# it on the template's Jinja2 syntax tree: "openai" (list-style content)
# when a for-loop iterates over the content of a message variable (the
# target of a loop over `messages` or over a variable set from it), else
# "string". Written from vLLM's behaviour; the Go side approximates it on
# the template text and is checked against this.
def _access(node, name, key=None):
    """node reads variable name (or name[key] / name.key), possibly sliced,
    filtered or tested."""
    N = jinja2.nodes
    if isinstance(node, (N.Filter, N.Test)):
        return node.node is not None and _access(node.node, name, key)
    if isinstance(node, N.Getitem) and isinstance(node.arg, N.Slice):
        return _access(node.node, name, key)
    if key is None:
        return isinstance(node, N.Name) and node.ctx == "load" and node.name == name
    if isinstance(node, N.Getitem):
        return (_access(node.node, name) and isinstance(node.arg, N.Const)
                and node.arg.value == key)
    if isinstance(node, N.Getattr):
        return _access(node.node, name) and node.attr == key
    return False


def content_format(env, template):
    try:
        ast = env.parse(template)
        lists, i = ["messages"], 0
        while i < len(lists):
            for a in ast.find_all(jinja2.nodes.Assign):
                if _access(a.node, lists[i]) and isinstance(a.target, jinja2.nodes.Name) \
                        and a.target.name not in lists:
                    lists.append(a.target.name)
            i += 1
        loops = list(ast.find_all(jinja2.nodes.For))
        msg_vars = [f.target.name for f in loops
                    if isinstance(f.target, jinja2.nodes.Name) and any(_access(f.iter, v) for v in lists)]
        for f in loops:
            if any(_access(f.iter, v, "content") for v in msg_vars):
                return "openai"
        return "string"
    except Exception:  # noqa: BLE001 - vLLM falls back to "string" too
        return "string"


TEXT_FIELDS = {"text": "text", "input_text": "text", "output_text": "text",
               "refusal": "refusal", "thinking": "thinking", "tool_reference": "name"}


def normalise_content(content, fmt):
    """vLLM's content parsing for text parts: null is no parts, a string is
    one text part; text parts with null text are skipped; in the string
    format a part whose text is empty is dropped too (vLLM keeps only truthy
    parse results, and there the result is the text itself)."""
    items = [] if content is None else [content] if isinstance(content, str) else content
    parts = []
    for p in items:
        if isinstance(p, str):
            parts.append(("text", p))
            continue
        kind = p.get("type")
        text = p.get(TEXT_FIELDS[kind])
        if text is None and kind in ("text", "refusal"):
            continue
        parts.append(("tool_reference" if kind == "tool_reference" else "text", text))
    if fmt == "string":
        return "\n".join(t for _, t in parts if t)
    return [{"type": "tool_reference", "name": t} if k == "tool_reference" else {"type": "text", "text": t}
            for k, t in parts]


def declared_first(d, keys):
    """A dict as pydantic validates it against a TypedDict declaring keys
    (extra fields allowed, as vLLM's request model allows them)."""
    out = {k: d[k] for k in keys if k in d}
    out.update((k, v) for k, v in d.items() if k not in keys)
    return out


def validated_call(c):
    """A tool call after vLLM's request validation against OpenAI's
    ChatCompletionMessageFunctionToolCallParam."""
    c = json.loads(json.dumps(c))
    c["function"] = declared_first(c["function"], ["arguments", "name"])
    return declared_first(c, ["id", "function", "type"])


def normalise_message(m, fmt):
    role = m["role"]
    out = {"role": role, "content": normalise_content(m.get("content"), fmt)}
    if role == "assistant":
        if m.get("tool_calls") is not None:
            out["tool_calls"] = [validated_call(c) for c in m["tool_calls"]]
        reasoning = m.get("reasoning")
        if reasoning is None:
            reasoning = m.get("reasoning_content")
        if reasoning is not None:
            out["reasoning"] = reasoning
            out["reasoning_content"] = reasoning
    elif role == "tool":
        if "tool_call_id" in m:
            out["tool_call_id"] = m["tool_call_id"]
        c = out["content"]
        if isinstance(c, list) and all(p.get("type") == "text" for p in c):
            out["content"] = "\n".join(p["text"] for p in c)
    for k in ("name", "task"):
        if isinstance(m.get(k), str):
            out[k] = m[k]
    if role == "developer":
        tools = m.get("tools")
        if tools is not None:
            fn_keys = ["name", "description", "parameters", "strict"]
            tools = [declared_first(dict(t, function=declared_first(t["function"], fn_keys)), ["function", "type"])
                     for t in tools]
        out["tools"] = tools
    if "tool_calls" in out:
        if not out["tool_calls"]:
            del out["tool_calls"]
        for c in out.get("tool_calls", []):
            args = c["function"].get("arguments")
            if isinstance(args, str):
                try:
                    c["function"]["arguments"] = json.loads(args)
                except ValueError:
                    c["function"]["arguments"] = {}
            elif not isinstance(args, (dict, list)):
                c["function"]["arguments"] = {}
    return out


def dump_tool(t):
    """ChatCompletionToolsParam.model_dump(): declared fields first, unset
    defer_loading left out, extra function fields after, extra tool fields
    dropped."""
    fn = t["function"]
    out_fn = {"name": fn["name"], "description": fn.get("description"), "parameters": fn.get("parameters")}
    defer = fn.get("defer_loading")
    if defer is None:
        defer = t.get("defer_loading")
    if defer is not None:
        out_fn["defer_loading"] = defer
    out_fn.update({k: v for k, v in fn.items() if k not in out_fn and k != "defer_loading"})
    out = {"type": "function", "function": out_fn}
    if t.get("defer_loading") is not None:
        out["defer_loading"] = t["defer_loading"]
    return out


NAMED_PARAMS = {"chat_template", "tools", "documents", "add_generation_prompt", "continue_final_message",
                "tokenize", "padding", "truncation", "max_length", "return_tensors", "return_dict",
                "return_assistant_tokens_mask", "tokenizer_kwargs"}


def template_args(conv):
    """vLLM's kwargs merge: request fields over chat_template_kwargs, null
    and "auto" values dropped, a kwargs tools list replacing the request's."""
    user = conv.get("chat_template_kwargs") or {}
    merged = dict(user)
    merged["add_generation_prompt"] = conv.get("add_generation_prompt", True)
    merged["continue_final_message"] = conv.get("continue_final_message", False)
    if conv.get("documents") is not None:
        merged["documents"] = conv["documents"]
    effort = conv.get("reasoning_effort")
    if effort is not None:
        merged["reasoning_effort"] = effort
        if "enable_thinking" not in user:
            merged["enable_thinking"] = effort != "none"
    merged = {k: v for k, v in merged.items() if v is not None and v != "auto"}
    tools = merged.get("tools")
    if tools is None and conv.get("tools"):
        tools = [dump_tool(t) for t in conv["tools"]]
    variables = {k: v for k, v in merged.items() if k not in NAMED_PARAMS}
    return tools, merged.get("documents"), merged["add_generation_prompt"], variables


def render(env, template, specials, conv):
    fmt = content_format(env, template)
    gen = conv.get("add_generation_prompt", True)
    cont = conv.get("continue_final_message", False)
    if gen and cont:
        raise ValueError("continue_final_message and add_generation_prompt are not compatible")
    tools, documents, gen, variables = template_args(conv)
    msgs = [normalise_message(m, fmt) for m in conv["messages"]]
    kwargs = dict(specials)
    kwargs.update(variables)
    out = env.from_string(template).render(messages=msgs, tools=tools, documents=documents,
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
    cases, ok, formats = [], 0, {}
    for name, tmpl, specials in templates:
        formats[name] = content_format(env, tmpl)
        for conv in convs:
            case = {"template": name, "conversation": conv["name"]}
            try:
                case["text"] = render(env, tmpl, specials, conv)
                ok += 1
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                case["error"] = "%s: %s" % (type(e).__name__, e)
            cases.append(case)
    body = json.dumps({"oracle": "Jinja2 " + jinja2.__version__, "fixed_now": FIXED_NOW.isoformat(),
                       "default_specials": DEFAULT_SPECIALS, "formats": formats, "cases": cases}, ensure_ascii=False)
    # mtime=0 keeps the file byte-identical when nothing changed.
    with open(os.path.join(out_dir, "renders.json.gz"), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(body.encode("utf-8"))
    print("render.py: %d templates x %d conversations: %d rendered, %d raised" %
          (len(templates), len(convs), ok, len(cases) - ok))


if __name__ == "__main__":
    main()
