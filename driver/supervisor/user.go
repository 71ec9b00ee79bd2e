package supervisor

import (
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// lookupUser resolves a user name or uid to "uid:gid[:group,...]", the
// form the supervise mode takes, so the supervisor needs no lookups.
func lookupUser(name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var uerr error
		if u, uerr = user.LookupId(name); uerr != nil {
			return "", fmt.Errorf("task user %q: %w", name, err)
		}
	}
	groups, err := u.GroupIds()
	if err != nil {
		groups = nil // no supplementary groups known; primary group only
	}
	return u.Uid + ":" + u.Gid + ":" + strings.Join(groups, ","), nil
}

// Credential resolves a user name or uid to process credentials, for
// commands the driver runs next to an engine as the same user.
func Credential(name string) (*syscall.Credential, error) {
	s, err := lookupUser(name)
	if err != nil {
		return nil, err
	}
	return parseCredential(s)
}

// parseCredential parses "uid:gid[:group,...]".
func parseCredential(s string) (*syscall.Credential, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("user %q: want uid:gid[:groups]", s)
	}
	uid, err := strconv.ParseUint(parts[0], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: bad uid", s)
	}
	gid, err := strconv.ParseUint(parts[1], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %q: bad gid", s)
	}
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if len(parts) == 3 && parts[2] != "" {
		for _, g := range strings.Split(parts[2], ",") {
			n, err := strconv.ParseUint(g, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("user %q: bad group %q", s, g)
			}
			c.Groups = append(c.Groups, uint32(n))
		}
	}
	return c, nil
}
