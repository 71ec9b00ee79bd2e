package sdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sdkNodeEnv names the directory `make sdk-node` installs the Node SDKs
// into (its node_modules); the Makefile exports it for every test.
const sdkNodeEnv = "LLMGW_SDK_NODE"

// scriptTimeout bounds one script run: a few dozen calls to a simulator
// without its latency model take seconds even on a loaded machine.
const scriptTimeout = 2 * time.Minute

// sdkNode returns the installed SDKs' directory. Unset, as in a plain
// `go test`, the Node checks skip and name the target that installs them;
// set but empty, they fail: `make test` installs them first.
func sdkNode(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(sdkNodeEnv)
	if dir == "" {
		t.Skipf("%s is unset: `make sdk-node` installs the pinned Node SDKs, and `make test` sets it", sdkNodeEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("%s=%s holds no SDKs (run `make sdk-node`): %v", sdkNodeEnv, dir, err)
	}
	return dir
}

// nodeBinary returns the Node runtime `make sdk-node` installed beside the
// SDKs (the SDKs need Node 22, newer than Debian's).
func nodeBinary(t *testing.T, sdkDir string) string {
	t.Helper()
	bins, _ := filepath.Glob(filepath.Join(sdkDir, "node_modules", "node-linux-*", "bin", "node"))
	if len(bins) != 1 {
		t.Fatalf("%s holds %d Node runtimes (node_modules/node-linux-*/bin/node), want 1: run `make sdk-node`", sdkDir, len(bins))
	}
	return bins[0]
}

// stageScripts copies testdata's scripts into a fresh directory beside a
// link to the installed node_modules: Node resolves an ES module's
// imports from the module's own directory up, never through NODE_PATH.
func stageScripts(t *testing.T, sdkDir string) string {
	t.Helper()
	dir := t.TempDir()
	scripts, err := filepath.Glob(filepath.Join("testdata", "*.mjs"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no testdata/*.mjs scripts (%v)", err)
	}
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(s)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sdkDir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// result is one line a script prints for a check.
type result struct {
	Check  string          `json:"check"`
	OK     bool            `json:"ok"`
	Detail json.RawMessage `json:"detail"`
}

// scriptRun is what one run of a script printed: a result per check, and
// its stderr for failure messages.
type scriptRun struct {
	results map[string]result
	stderr  string
	err     error
}

// runScript runs script from dir with the checks named, against the
// fleet, and collects its lines.
func runScript(t *testing.T, dir, script string, f *fleet, checks []string) scriptRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBinary(t, dir), append([]string{filepath.Join(dir, script)}, checks...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SDK_ROUTER_A="+f.a.base(), "SDK_ROUTER_B="+f.b.base(), "SDK_API_KEY="+apiKey,
		"SDK_CHAT_MODEL="+chatModel, "SDK_EMBED_MODEL="+embedModel)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run := scriptRun{results: map[string]result{}, err: cmd.Run(), stderr: stderr.String()}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue // a library's own console output
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("%s printed %q: %v", script, line, err)
			continue
		}
		run.results[r.Check] = r
	}
	return run
}
