package main

import (
	"fmt"
	"io"

	"github.com/llmgw/llmgw/jobs"
)

const jobsUsage = `usage: llmgw jobs validate FILE...`

// runJobs runs `llmgw jobs SUBCOMMAND ...` and returns the exit code: 0 when
// every file is valid, 1 when any is invalid or unreadable (every problem of
// every file printed, so one run shows all there is to fix), 2 for bad usage.
func runJobs(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "validate" {
		fmt.Fprintln(stderr, jobsUsage)
		return 2
	}
	files := args[1:]
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
		for _, p := range problems {
			fmt.Fprintln(stdout, p)
		}
		code = 1
	}
	return code
}
