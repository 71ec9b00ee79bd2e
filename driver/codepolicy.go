package driver

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// codeEnv lists environment variables that change what code the engine
// runs, refused in a job unless the plugin config's allowed_code_env names
// them: on a node where jobs run as an unprivileged user they would still
// let a job submitter run code the operator did not install. An entry
// ending in "*" is a prefix. vLLM's own (vllm/envs.py; docs/VLLM_PARITY.md,
// "Code a job may load"): VLLM_NCCL_SO_PATH loads a shared library,
// LD_LIBRARY_PATH is where it looks for NCCL otherwise,
// VLLM_LOGGING_CONFIG_PATH is a logging dictConfig, which imports the
// classes it names, and VLLM_PLUGINS chooses which installed plugins run.
var codeEnv = map[string]string{
	"LD_*":                     "the dynamic loader preloads, audits or searches libraries it names",
	"GCONV_PATH":               "glibc loads iconv modules from it",
	"PATH":                     "it chooses the binaries vLLM and its compilers run",
	"CC":                       "Triton compiles kernels with it",
	"CXX":                      "PyTorch compiles extensions with it",
	"BASH_ENV":                 "bash runs it before any script",
	"PYTHONPATH":               "Python imports modules from it first",
	"PYTHONHOME":               "it replaces Python's standard library",
	"PYTHONSTARTUP":            "Python runs it at an interactive start",
	"PYTHONUSERBASE":           "Python imports user site packages from it",
	"PYTHONPLATLIBDIR":         "it changes where Python finds its libraries",
	"PYTHONBREAKPOINT":         "breakpoint() imports and calls the callable it names",
	"PYTHONEXECUTABLE":         "it changes the interpreter subprocesses start",
	"VLLM_NCCL_SO_PATH":        "vLLM loads it as the NCCL library",
	"VLLM_LOGGING_CONFIG_PATH": "vLLM's logging config imports the classes it names",
	"VLLM_PLUGINS":             "it chooses which installed vLLM plugins run",
}

// codeArgs lists vLLM flags that make the engine run code the model or the
// job supplies, refused unless the plugin config's allowed_code_args names
// them. --config is here because its YAML file may set any of the others.
var codeArgs = map[string]string{
	"--trust-remote-code":       "it runs the Python code that comes with a hub model",
	"--config":                  "its YAML file can set any flag, --trust-remote-code included",
	"--tool-parser-plugin":      "vLLM imports the Python file it names",
	"--reasoning-parser-plugin": "vLLM imports the Python file it names",
	"--worker-extension-cls":    "vLLM imports the class it names into every worker",
	"--worker-cls":              "vLLM imports the class it names as the worker",
	"--logits-processors":       "vLLM imports the classes it names",
	"--middleware":              "vLLM imports the ASGI middleware it names",
}

// codeEnvEntry is the codeEnv entry covering key, "" for none.
func codeEnvEntry(key string) string {
	if _, ok := codeEnv[key]; ok {
		return key
	}
	for k := range codeEnv {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(key, p) {
			return k
		}
	}
	return ""
}

// validCodeAllowances checks that allowed_code_env and allowed_code_args
// name only what the driver refuses: a misspelt allowance would otherwise
// do nothing, silently.
func (c *Config) validCodeAllowances() error {
	for _, k := range c.AllowedCodeEnv {
		if codeEnvEntry(k) == "" {
			return fmt.Errorf("allowed_code_env: %q is not a variable the driver refuses (%s)", k, strings.Join(sortedKeys(codeEnv), ", "))
		}
	}
	for _, a := range c.AllowedCodeArgs {
		if _, ok := codeArgs[a]; !ok {
			return fmt.Errorf("allowed_code_args: %q is not a flag the driver refuses (%s)", a, strings.Join(sortedKeys(codeArgs), ", "))
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// CodePolicy is what a job may set that changes the code an engine runs:
// the plugin config's allowances. The zero value allows nothing, the
// plugin config's default, which `llmgw jobs validate` checks against.
type CodePolicy struct {
	AllowedEnv  []string
	AllowedArgs []string
}

// CheckCode refuses the task config's env keys and args that change what
// code the engine runs, unless the policy allows them, naming the key or
// flag and why.
func (t *TaskConfig) CheckCode(p CodePolicy) error {
	if err := checkCodeEnv("env", t.Env, nil, p); err != nil {
		return err
	}
	for i, a := range t.Args {
		for flag, why := range codeArgs {
			if contains(p.AllowedArgs, flag) {
				continue
			}
			if how, ok := (reservedFlag{names: []string{flag}}).matches(a); ok {
				return fmt.Errorf("args[%d]: %s%s is refused: %s; the plugin config's allowed_code_args must name it", i, flag, how, why)
			}
		}
	}
	return nil
}

// checkCodeEnv refuses env keys that change the code the engine runs.
// inherited, when set, reads the plugin's own environment: a key Nomad
// passes with the agent's own value came from the node, not the job (Nomad
// gives drivers without filesystem isolation the agent's environment).
func checkCodeEnv(field string, env map[string]string, inherited func(string) (string, bool), p CodePolicy) error {
	for _, k := range sortedKeys(env) {
		entry := codeEnvEntry(k)
		if entry == "" || contains(p.AllowedEnv, k) || contains(p.AllowedEnv, entry) {
			continue
		}
		if inherited != nil {
			if v, ok := inherited(k); ok && v == env[k] {
				continue
			}
		}
		return fmt.Errorf("%s: %s is refused: %s; the plugin config's allowed_code_env must name it", field, k, codeEnv[entry])
	}
	return nil
}

// checkTaskEnv applies checkCodeEnv to the environment Nomad gives the task
// (its env block and templates), against the plugin's own environment.
func checkTaskEnv(nomadEnv map[string]string, p CodePolicy) error {
	return checkCodeEnv("task env", nomadEnv, os.LookupEnv, p)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
