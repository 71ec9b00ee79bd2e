package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/jobs"
)

const jobsUsage = `usage: llmgw jobs validate FILE...
       llmgw jobs run [-address URL] [-var NAME=VALUE]... FILE`

// runJobs runs `llmgw jobs SUBCOMMAND ...` and returns the exit code.
func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) >= 1 && args[0] == "validate" {
		return validateJobs(args[1:], stdout, stderr)
	}
	if len(args) >= 1 && args[0] == "run" {
		return runJob(ctx, args[1:], stdout, stderr)
	}
	if len(args) >= 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, jobsUsage)
		return 0
	}
	fmt.Fprintln(stderr, jobsUsage)
	return 2
}

// runJob is `llmgw jobs run`: validate, submit through the Nomad agent and
// follow the deployment. 0 when it succeeds, 1 when it does not, 2 for bad
// usage. The agent address and token come from NOMAD_ADDR and NOMAD_TOKEN,
// as for the nomad CLI, unless -address is given.
func runJob(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llmgw jobs run", flag.ContinueOnError)
	cfg := api.DefaultConfig()
	fs.StringVar(&cfg.Address, "address", cfg.Address, "Nomad agent HTTP address (default $NOMAD_ADDR)")
	var pairs varFlag
	fs.Var(&pairs, "var", "a value for one of the jobspec's input variables, NAME=VALUE (repeatable, as for nomad job run)")
	if code, done := parseFlags(fs, args, jobsUsage, stdout, stderr); done {
		return code
	}
	vars, err := jobs.VarFile(pairs)
	if err != nil {
		fmt.Fprintf(stderr, "llmgw jobs run: %v\n", err)
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "llmgw jobs run: want one jobspec, got %d\n%s\n", fs.NArg(), jobsUsage)
		return 2
	}
	client, err := api.NewClient(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "llmgw jobs run: nomad client: %v\n", err)
		return 1
	}
	if err := jobs.SubmitVars(ctx, client, fs.Arg(0), vars, stdout); err != nil {
		fmt.Fprintf(stderr, "llmgw jobs run: %v\n", err)
		return 1
	}
	return 0
}

// validateJobs is `llmgw jobs validate`: 0 when every file is valid
// (warnings are printed, and do not count), 1 when any is invalid or
// unreadable (every problem of every file printed, so one
// run shows all there is to fix), 2 for bad usage. It has no flags, but
// parses them so that -h is help and "--" lets a file name start with "-".
func validateJobs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("llmgw jobs validate", flag.ContinueOnError)
	if code, done := parseFlags(fs, args, jobsUsage, stdout, stderr); done {
		return code
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintf(stderr, "llmgw jobs validate: no files given\n%s\n", jobsUsage)
		return 2
	}
	code := 0
	for _, f := range files {
		problems, err := jobs.ValidateFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "llmgw jobs validate: %s: %v\n", f, err)
			code = 1
			continue
		}
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "%s: ok\n", f)
			continue
		}
		errs := 0
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
			if !p.Warning {
				errs++
			}
		}
		if errs == 0 {
			fmt.Fprintf(stdout, "%s: ok, with %d warnings\n", f, len(problems))
			continue
		}
		code = 1
	}
	return code
}

// varFlag collects repeated -var flags in order.
type varFlag []string

func (v *varFlag) String() string { return strings.Join(*v, ",") }

func (v *varFlag) Set(s string) error {
	*v = append(*v, s)
	return nil
}
