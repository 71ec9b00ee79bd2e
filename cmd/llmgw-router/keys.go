package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmgw/llmgw/router/auth"
)

// keyTool serves -new-key (print a new key and its hash) and -hash-key
// (hash the key on stdin's first line).
func keyTool(generate bool, in io.Reader, out io.Writer) error {
	if generate {
		k, err := auth.NewKey()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "key:    %s\nsha256: %s\n", k, auth.HashKey(k))
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the key from stdin: %w", err)
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return errors.New("-hash-key: no key on stdin (echo -n \"$KEY\" | llmgw-router -hash-key)")
	}
	_, err = fmt.Fprintln(out, auth.HashKey(key))
	return err
}
