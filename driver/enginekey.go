package driver

import (
	"fmt"
	"slices"
	"strings"
)

// vllmAPIKeyEnv is the variable vLLM reads its API key from when no
// --api-key flag is given.
const vllmAPIKeyEnv = "VLLM_API_KEY"

// validAPIKeyEnv checks the task config's api_key_env: a variable name,
// and no --api-key in args, which vLLM would prefer over the environment
// (and which shows the key to anyone who can list processes).
func (t *TaskConfig) validAPIKeyEnv() error {
	if t.APIKeyEnv == "" {
		return nil
	}
	if strings.ContainsAny(t.APIKeyEnv, "=\x00") {
		return fmt.Errorf("api_key_env: invalid variable name %q", t.APIKeyEnv)
	}
	if slices.ContainsFunc(t.Args, func(a string) bool { return a == "--api-key" || strings.HasPrefix(a, "--api-key=") }) {
		return fmt.Errorf("api_key_env: args also pass --api-key, which vLLM would use instead; keep the key in the environment only")
	}
	return nil
}

// withEngineKey hands the engine its API key from the task environment:
// env must hold the variable api_key_env names (a Nomad template with
// env = true reading a Nomad Variable puts it there), non-empty, and the
// engine gets it as VLLM_API_KEY, so the key is never in argv or in the
// job's config. An empty name changes nothing.
func withEngineKey(env []string, name string) ([]string, error) {
	if name == "" {
		return env, nil
	}
	prefix := name + "="
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, prefix) })
	if i < 0 || len(env[i]) == len(prefix) {
		return nil, fmt.Errorf("api_key_env: the task environment has no non-empty %s; render it from a Nomad Variable with a template block (env = true) before the task starts", name)
	}
	if name == vllmAPIKeyEnv {
		return env, nil
	}
	key := env[i][len(prefix):]
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, vllmAPIKeyEnv+"=") })
	out = append(out, vllmAPIKeyEnv+"="+key)
	slices.Sort(out)
	return out, nil
}
