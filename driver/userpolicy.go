package driver

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// defaultEngineUser is who engines run as when the task names no user and
// the plugin runs as root: an engine serves whatever the job submitter
// points it at, so it gets no more of the node than Nomad's exec driver
// gives a task by default.
const defaultEngineUser = "nobody"

// usersSpec is one entry of allowed_users or denied_users: a user name, a
// uid, or an inclusive uid range "lo-hi" (the form of exec's
// denied_host_uids). Names are compared by the uid they resolve to, so an
// alias of root (another name with uid 0) is root.
type usersSpec string

// parseRange reads "lo-hi" or a single uid; ok is false for a name.
func (s usersSpec) parseRange() (lo, hi uint64, ok bool, err error) {
	a, b, isRange := strings.Cut(string(s), "-")
	lo, errLo := strconv.ParseUint(a, 10, 32)
	if !isRange {
		return lo, lo, errLo == nil, nil
	}
	hi, errHi := strconv.ParseUint(b, 10, 32)
	if errLo != nil || errHi != nil || hi < lo {
		return 0, 0, false, fmt.Errorf("%q: want a user name, a uid or a uid range lo-hi", string(s))
	}
	return lo, hi, true, nil
}

// matches reports whether the user (name, uid) falls under the entry.
func (s usersSpec) matches(name string, uid uint64) bool {
	lo, hi, numeric, err := s.parseRange()
	if err != nil {
		return false
	}
	if numeric {
		return uid >= lo && uid <= hi
	}
	if string(s) == name {
		return true
	}
	u, err := user.Lookup(string(s))
	return err == nil && u.Uid == strconv.FormatUint(uid, 10)
}

func validUserSpecs(field string, specs []string) error {
	for _, s := range specs {
		if s == "" {
			return fmt.Errorf("%s: empty entry", field)
		}
		if _, _, _, err := usersSpec(s).parseRange(); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

// engineUser is who the task's engine runs as: the task's user, else the
// plugin config's default_user when the plugin is root (only root can
// switch users), else "" for the plugin's own user.
func engineUser(taskUser string, c Config, euid int) string {
	if taskUser != "" {
		return taskUser
	}
	if euid == 0 {
		return c.DefaultUser
	}
	return ""
}

// checkUser refuses an engine user the plugin config does not allow,
// naming it and the rule: denied_users wins over allowed_users, and an
// empty allowed_users allows every user not denied. "" is the plugin's own
// user, checked like any other (root unless the operator runs the plugin
// as someone else).
func checkUser(name string, c Config) error {
	uid, shown, err := resolveUser(name)
	if err != nil {
		return err
	}
	for _, d := range c.DeniedUsers {
		if usersSpec(d).matches(shown, uid) {
			return fmt.Errorf("user %q (uid %d) is denied by the plugin config's denied_users entry %q; "+
				"run the task as another user, or have the operator change denied_users", shown, uid, d)
		}
	}
	if len(c.AllowedUsers) == 0 {
		return nil
	}
	for _, a := range c.AllowedUsers {
		if usersSpec(a).matches(shown, uid) {
			return nil
		}
	}
	return fmt.Errorf("user %q (uid %d) is not in the plugin config's allowed_users", shown, uid)
}

// resolveUser finds the uid of a user name or uid; "" is the plugin's own
// effective user.
func resolveUser(name string) (uint64, string, error) {
	if name == "" {
		uid := uint64(os.Geteuid())
		shown := strconv.FormatUint(uid, 10)
		if u, err := user.LookupId(shown); err == nil {
			shown = u.Username
		}
		return uid, shown, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		var idErr error
		if u, idErr = user.LookupId(name); idErr != nil {
			return 0, name, fmt.Errorf("user %q: %w", name, err)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, name, fmt.Errorf("user %q: uid %q: %w", name, u.Uid, err)
	}
	return uid, name, nil
}

// admit applies the plugin config's policy to a task before anything
// starts: the engine's user, and env keys and args that change what code
// it runs. It returns the user the engine runs as ("" for the plugin's
// own).
func admit(cfg *drivers.TaskConfig, task TaskConfig, pc Config) (string, error) {
	runAs := engineUser(cfg.GetUser(), pc, os.Geteuid())
	if err := checkUser(runAs, pc); err != nil {
		return "", err
	}
	if err := task.CheckCode(pc.codePolicy()); err != nil {
		return "", err
	}
	if err := checkTaskEnv(cfg.GetEnv(), pc.codePolicy()); err != nil {
		return "", err
	}
	return runAs, nil
}
