package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// kvDirName is the directory, in a task's own directory, that holds its
// engine's KV-event sockets.
const kvDirName = "llmgw-kv"

// kvDir makes the task's KV socket directory when the plugin config asks
// for ipc sockets, and returns it; "" means loopback TCP, and when ipc was
// asked for, a task event says why not.
func (d *Driver) kvDir(cfg *drivers.TaskConfig, task TaskConfig, st *TaskState, log hclog.Logger) string {
	if d.pluginConfig().KVTransport != kvTransportIPC {
		return ""
	}
	dir, err := kvSocketDir(st.Dir, st.User, task.DataParallelSize)
	if err != nil {
		log.Warn("kv events fall back to loopback TCP, which any local process can reach", "error", err)
		d.events.emit(cfg, "KV events over loopback TCP, reachable by any local process: "+err.Error(),
			map[string]string{"kv_transport": kvTransportTCP})
		return ""
	}
	return dir
}

// kvSocketDir makes the directory of a replica's ipc:// KV-event sockets
// in its task directory: mode 0700, owned by runAs (the engine's user; ""
// leaves the plugin's). The engine binds its sockets there and the plugin
// connects as root (or as the engine's user, when it cannot switch users),
// while any other user is refused at the directory. It fails when the
// longest socket path of dataParallel ranks would not fit a Unix socket
// address, or the directory cannot be made.
//
// The engine's user may write to the task directory, so the name may
// already be taken by a link it planted: the directory is opened without
// following one and changed through its descriptor, so the plugin never
// changes the owner or mode of anything else.
func kvSocketDir(taskDir, runAs string, dataParallel int) (string, error) {
	dir := filepath.Join(taskDir, kvDirName)
	if err := intake.CheckIPCDir(dir, dataParallel); err != nil {
		return "", err
	}
	uid, gid := -1, -1
	if runAs != "" {
		cred, err := supervisor.Credential(runAs)
		if err != nil {
			return "", err
		}
		if err := reachable(taskDir, cred); err != nil {
			return "", err
		}
		uid, gid = int(cred.Uid), int(cred.Gid)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("kv socket directory: %w", err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("kv socket directory %s: %w", dir, err)
	}
	defer syscall.Close(fd)
	if uid >= 0 {
		if err := syscall.Fchown(fd, uid, gid); err != nil {
			return "", fmt.Errorf("kv socket directory %s: chown to %s: %w", dir, runAs, err)
		}
	}
	if err := syscall.Fchmod(fd, 0o700); err != nil {
		return "", fmt.Errorf("kv socket directory %s: chmod: %w", dir, err)
	}
	return dir, nil
}

// reachable reports whether a process with cred may search every
// directory from the root down to dir, by their mode bits (an ACL that
// grants more is not read: the driver then falls back to TCP).
func reachable(dir string, cred *syscall.Credential) error {
	if cred.Uid == 0 {
		return nil
	}
	groups := map[uint32]bool{cred.Gid: true}
	for _, g := range cred.Groups {
		groups[g] = true
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return fmt.Errorf("kv socket directory: %s: %w", p, err)
		}
		bit := uint32(0o001) // others
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case groups[st.Gid]:
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return fmt.Errorf("the engine's user (uid %d) cannot enter %s, mode %o", cred.Uid, p, st.Mode&0o777)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
