package driver

import (
	"os"
	"strings"
	"testing"
)

// TestCheckUser: denied_users wins, names resolve to uids (so an alias of
// root is root), and an empty allowed_users allows all not denied.
func TestCheckUser(t *testing.T) {
	for _, tc := range []struct {
		name, user      string
		allowed, denied []string
		wantErr         string // "" for allowed
	}{
		{"root denied by name", "root", nil, []string{"root"}, `user "root" (uid 0) is denied by the plugin config's denied_users entry "root"`},
		{"uid 0 denied by name", "0", nil, []string{"root"}, `user "0" (uid 0) is denied`},
		{"root denied by range", "root", nil, []string{"0-999"}, `entry "0-999"`},
		{"nobody allowed by default", "nobody", nil, []string{"root"}, ""},
		{"not in allowed", "nobody", []string{"root"}, nil, `user "nobody" (uid 65534) is not in the plugin config's allowed_users`},
		{"deny beats allow", "nobody", []string{"nobody"}, []string{"65534"}, `denied_users entry "65534"`},
		{"root allowed by operator", "root", nil, nil, ""},
		{"unknown user", "no-such-user-llmgw", nil, nil, `user "no-such-user-llmgw"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkUser(tc.user, Config{AllowedUsers: tc.allowed, DeniedUsers: tc.denied})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestEngineUser: the task's user wins; default_user only when the plugin
// is root, which alone can switch users.
func TestEngineUser(t *testing.T) {
	c := Config{DefaultUser: "nobody"}
	for _, tc := range []struct {
		task string
		euid int
		want string
	}{{"alice", 0, "alice"}, {"", 0, "nobody"}, {"", 1000, ""}, {"alice", 1000, "alice"}} {
		if got := engineUser(tc.task, c, tc.euid); got != tc.want {
			t.Errorf("engineUser(%q, euid %d) = %q, want %q", tc.task, tc.euid, got, tc.want)
		}
	}
}

// TestUserSpecsValidated: a malformed range fails the plugin config.
func TestUserSpecsValidated(t *testing.T) {
	for _, bad := range []string{"", "10-2", "1-x"} {
		if err := validUserSpecs("denied_users", []string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := validUserSpecs("denied_users", []string{"root", "0", "0-999"}); err != nil {
		t.Error(err)
	}
}

// TestCheckCode: env keys and flags that change the code the engine runs
// are refused, naming the key or flag, in every spelling vLLM's parser
// takes, unless allowed.
func TestCheckCode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		policy  CodePolicy
		wantErr string
	}{
		{"LD_PRELOAD", map[string]string{"LD_PRELOAD": "/tmp/x.so"}, nil, CodePolicy{}, "env: LD_PRELOAD is refused"},
		{"LD_AUDIT by prefix", map[string]string{"LD_AUDIT": "x"}, nil, CodePolicy{}, "env: LD_AUDIT is refused"},
		{"PYTHONPATH", map[string]string{"PYTHONPATH": "/x"}, nil, CodePolicy{}, "env: PYTHONPATH is refused"},
		{"VLLM_PLUGINS", map[string]string{"VLLM_PLUGINS": "x"}, nil, CodePolicy{}, "env: VLLM_PLUGINS is refused"},
		{"harmless env", map[string]string{"PYTHONUNBUFFERED": "1", "VLLM_LOGGING_LEVEL": "DEBUG"}, nil, CodePolicy{}, ""},
		{"allowed key", map[string]string{"LD_LIBRARY_PATH": "/x"}, nil, CodePolicy{AllowedEnv: []string{"LD_LIBRARY_PATH"}}, ""},
		{"allowed prefix", map[string]string{"LD_PRELOAD": "/x"}, nil, CodePolicy{AllowedEnv: []string{"LD_*"}}, ""},
		{"trust-remote-code", nil, []string{"--trust-remote-code"}, CodePolicy{}, "args[0]: --trust-remote-code is refused"},
		{"underscores", nil, []string{"--dtype", "auto", "--trust_remote_code"}, CodePolicy{}, "args[2]: --trust-remote-code (as --trust_remote_code)"},
		{"with value", nil, []string{"--trust-remote-code=true"}, CodePolicy{}, "args[0]: --trust-remote-code is refused"},
		{"abbreviated", nil, []string{"--trust-rem"}, CodePolicy{}, "abbreviated --trust-rem"},
		{"config file", nil, []string{"--config", "x.yaml"}, CodePolicy{}, "args[0]: --config is refused"},
		{"tool parser plugin", nil, []string{"--tool-parser-plugin=p.py"}, CodePolicy{}, "--tool-parser-plugin is refused"},
		{"no-trust is fine", nil, []string{"--no-trust-remote-code", "--enable-chunked-prefill"}, CodePolicy{}, ""},
		{"allowed flag", nil, []string{"--trust-remote-code"}, CodePolicy{AllowedArgs: []string{"--trust-remote-code"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := TaskConfig{Env: tc.env, Args: tc.args}
			err := task.CheckCode(tc.policy)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestTaskEnvFromAgent: a key Nomad passes with the agent's own value came
// from the node and passes; the same key with another value came from the
// job and is refused.
func TestTaskEnvFromAgent(t *testing.T) {
	agent := map[string]string{"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
	lookup := func(k string) (string, bool) { v, ok := agent[k]; return v, ok }
	if err := checkCodeEnv("task env", agent, lookup, CodePolicy{}); err != nil {
		t.Errorf("agent's own environment refused: %v", err)
	}
	job := map[string]string{"PATH": "/alloc/data/bin:/usr/bin"}
	err := checkCodeEnv("task env", job, lookup, CodePolicy{})
	if err == nil || !strings.Contains(err.Error(), "task env: PATH is refused") {
		t.Errorf("job's PATH: got %v", err)
	}
}

// TestCodeAllowancesValidated: an allowance naming nothing the driver
// refuses fails the plugin config rather than doing nothing.
func TestCodeAllowancesValidated(t *testing.T) {
	for _, c := range []Config{{AllowedCodeEnv: []string{"PYTHONPATHS"}}, {AllowedCodeArgs: []string{"--trust-remote"}}} {
		if err := c.validCodeAllowances(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	ok := Config{AllowedCodeEnv: []string{"LD_PRELOAD", "LD_*"}, AllowedCodeArgs: []string{"--trust-remote-code"}}
	if err := ok.validCodeAllowances(); err != nil {
		t.Error(err)
	}
}

// TestDefaultUserChecked: as root, a plugin config whose default_user is
// denied, or does not exist, fails; the defaults pass.
func TestDefaultUserChecked(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("default_user is checked only when the plugin runs as root; this test does not")
	}
	base := Config{Engine: "vllm", KVFlushInterval: 1, KVKeepAlive: 1, RouterService: "r", Discovery: discoveryConsul, KVTransport: kvTransportIPC}
	for _, tc := range []struct {
		user    string
		denied  []string
		wantErr string
	}{
		{"nobody", []string{"root"}, ""},
		{"root", []string{"root"}, `default_user: user "root" (uid 0) is denied`},
		{"no-such-user-llmgw", nil, `default_user: user "no-such-user-llmgw"`},
	} {
		c := base
		c.DefaultUser, c.DeniedUsers = tc.user, tc.denied
		err := c.validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("default_user %q: got %v; want %q", tc.user, err, tc.wantErr)
		}
	}
}
