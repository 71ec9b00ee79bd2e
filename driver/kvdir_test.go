package driver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReachable: a directory counts as reachable for a user when every
// directory down to it grants search to that user by owner, group or
// other bits, whichever applies, as the kernel decides.
func TestReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot give the test directories other owners")
	}
	const owner, group, other = 65531, 65532, 65533
	root, err := os.MkdirTemp("", "reach")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "task")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, owner, group); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mode os.FileMode
		cred syscall.Credential
		want string // "" when reachable, else part of the error
	}{
		{"owner, 0700", 0o700, syscall.Credential{Uid: owner, Gid: other}, ""},
		{"group, 0710", 0o710, syscall.Credential{Uid: other, Gid: group}, ""},
		{"supplementary group, 0710", 0o710, syscall.Credential{Uid: other, Gid: other, Groups: []uint32{group}}, ""},
		{"group, 0701: the group bits decide", 0o701, syscall.Credential{Uid: other, Gid: group}, "cannot enter " + dir},
		{"other, 0700", 0o700, syscall.Credential{Uid: other, Gid: other}, "cannot enter " + dir},
		{"other, 0711", 0o711, syscall.Credential{Uid: other, Gid: other}, ""},
		{"root", 0o700, syscall.Credential{Uid: 0, Gid: 0}, ""},
	}
	for _, tt := range tests {
		if err := os.Chmod(dir, tt.mode); err != nil {
			t.Fatal(err)
		}
		err := reachable(dir, &tt.cred)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: reachable = %v; want %q", tt.name, err, tt.want)
		}
	}
}

// TestKVSocketDirRefusesLink: a link the engine's user planted at the
// socket directory's name is refused, and what it points at keeps its
// owner and mode.
func TestKVSocketDirRefusesLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the driver changes owners only as root")
	}
	taskDir, err := os.MkdirTemp("", "task")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(taskDir) })
	if err := os.Chmod(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(taskDir, "precious")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(taskDir, kvDirName)); err != nil {
		t.Fatal(err)
	}
	if dir, err := kvSocketDir(taskDir, "nobody", 1); err == nil {
		t.Fatalf("kvSocketDir through a link = %s; want an error", dir)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("link target: owner %d, mode %v; want root's, 0755, untouched", st.Uid, fi.Mode().Perm())
	}
}
