package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parseFlags parses args into fs. Help asked for (-h, -help or --help) is
// not a usage error: the usage text and every flag go to stdout and the
// command exits 0, as nomad and consul do. A bad flag prints its problem,
// the usage text and the flags to stderr, for exit 2. done says the
// command is finished and should return code.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {} // printed below, to the stream that fits
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		printUsage(fs, usage, stdout)
		return 0, true
	default:
		printUsage(fs, usage, stderr)
		return 2, true
	}
}

// printUsage writes usage and, when fs has any, its flags to w.
func printUsage(fs *flag.FlagSet, usage string, w io.Writer) {
	fmt.Fprintln(w, usage)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "flags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// isHelp reports whether arg asks for help rather than naming a
// subcommand.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
