package chattemplate

import (
	"fmt"

	"github.com/ardanlabs/jinja"
)

// renderArgs are the template's inputs that come from request fields and
// chat_template_kwargs, merged as vLLM merges them.
type renderArgs struct {
	tools, documents    jinja.Value
	addGenerationPrompt bool
	vars                *jinja.Dict // other template variables, in order
}

// namedParams are transformers' apply_chat_template parameters: a
// chat_template_kwargs entry with one of these names is consumed by the
// call and never becomes a template variable (tools and documents do reach
// the template, as its tools and documents).
var namedParams = map[string]bool{
	"chat_template": true, "tools": true, "documents": true, "add_generation_prompt": true,
	"continue_final_message": true, "tokenize": true, "padding": true, "truncation": true,
	"max_length": true, "return_tensors": true, "return_dict": true,
	"return_assistant_tokens_mask": true, "tokenizer_kwargs": true,
}

// clashingParams are names that reach transformers twice (as its own
// argument and as a kwarg): Python refuses the call, so vLLM answers 400.
var clashingParams = []string{"conversation", "messages"}

// templateArgs merges chat_template_kwargs with the request's own fields the
// way vLLM's ChatCompletionRequest.build_chat_params and
// ChatParams.with_defaults do:
//   - add_generation_prompt and continue_final_message always come from the
//     request; documents and reasoning_effort from the request when set;
//   - reasoning_effort also sets enable_thinking (false for "none") unless
//     the client's kwargs name enable_thinking;
//   - entries whose value is null or "auto" are dropped;
//   - a kwargs "tools" replaces the request's tools, unnormalised.
func templateArgs(req Request) (renderArgs, error) {
	user := jinja.NewDict().AsDict()
	if !isNull(req.Kwargs) {
		kw, err := decodeValue(req.Kwargs)
		if err != nil || !kw.IsDict() {
			return renderArgs{}, fmt.Errorf("chat_template_kwargs: want an object")
		}
		user = kw.AsDict()
	}
	merged := jinja.NewDict().AsDict()
	for _, k := range user.Keys {
		v, _ := user.Get(k)
		merged.Set(k, v)
	}
	merged.Set("add_generation_prompt", jinja.NewBool(req.AddGenerationPrompt))
	merged.Set("continue_final_message", jinja.NewBool(req.ContinueFinalMessage))
	if !isNull(req.Documents) {
		docs, err := decodeValue(req.Documents)
		if err != nil {
			return renderArgs{}, fmt.Errorf("documents: %w", err)
		}
		merged.Set("documents", docs)
	}
	if req.ReasoningEffort != "" {
		merged.Set("reasoning_effort", jinja.NewString(req.ReasoningEffort))
		if !user.Has("enable_thinking") {
			merged.Set("enable_thinking", jinja.NewBool(req.ReasoningEffort != "none"))
		}
	}
	args := renderArgs{tools: jinja.None(), documents: jinja.None(), addGenerationPrompt: req.AddGenerationPrompt,
		vars: jinja.NewDict().AsDict()}
	userTools := false
	for _, k := range merged.Keys {
		v, _ := merged.Get(k)
		if v.IsNone() || (v.IsString() && v.AsString() == "auto") {
			continue
		}
		for _, c := range clashingParams {
			if k == c {
				return renderArgs{}, fmt.Errorf("chat_template_kwargs.%s: the name is taken by the chat template call itself", k)
			}
		}
		switch {
		case k == "tools":
			if err := checkToolList(v); err != nil {
				return renderArgs{}, err
			}
			args.tools, userTools = v, true
		case k == "documents":
			args.documents = v
		case namedParams[k] || k == tojsonName:
		default:
			args.vars.Set(k, v)
		}
	}
	if !userTools {
		tools, err := normaliseTools(req.Tools)
		if err != nil {
			return renderArgs{}, err
		}
		args.tools = tools
	}
	return args, nil
}

// checkToolList accepts what transformers accepts as tools given in
// chat_template_kwargs: a list of JSON-schema objects.
func checkToolList(v jinja.Value) error {
	if !v.IsList() {
		return fmt.Errorf("chat_template_kwargs.tools: want an array of objects")
	}
	for i, t := range v.AsList().Items {
		if !t.IsDict() {
			return fmt.Errorf("chat_template_kwargs.tools[%d]: want an object", i)
		}
	}
	return nil
}
