package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/config"
)

// TestREADMEDocumentsEveryFlag: every flag and its environment variable
// appear, in backquotes, in the README's configuration table.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	config.BindFlags(fs)
	env := regexp.MustCompile(`\(env (LLMGW_[A-Z_]+)\)`)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return
		}
		if !strings.Contains(readme, "`-"+f.Name+"`") {
			t.Errorf("README lacks flag `-%s`", f.Name)
		}
		if m := env.FindStringSubmatch(f.Usage); m == nil || !strings.Contains(readme, "`"+m[1]+"`") {
			t.Errorf("README lacks the environment variable of -%s (%q)", f.Name, f.Usage)
		}
	})
}
