// Command cairn runs Cairn: a document database that speaks the MongoDB wire
// protocol. This package owns flags, subcommands and the process lifecycle;
// everything else lives in internal packages.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is Cairn's own version (MongoDB-compatible version numbers are the
// server's business: see buildInfo).
var version = "0.1.0-dev"

type subcommand struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func subcommands() []subcommand {
	return []subcommand{
		{"serve", "run a Cairn node that MongoDB clients connect to", runServe},
		{"bench", "run YCSB workloads against a server and its floors", runBench},
		{"cluster", "cluster up: start a local replica set on loopback until Ctrl-C", runCluster},
		{"version", "print Cairn's version", func(_ []string, stdout, _ io.Writer) int {
			fmt.Fprintln(stdout, "cairn", version)
			return 0
		}},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		usage(stdout)
		return 0
	case "--version", "-version":
		fmt.Fprintln(stdout, "cairn", version)
		return 0
	}
	for _, c := range subcommands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "cairn: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Cairn is a document database that speaks the MongoDB wire protocol.")
	fmt.Fprintln(w, "\nUsage:\n  cairn <command> [flags]\n\nCommands:")
	for _, c := range subcommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'cairn <command> --help' for a command's flags.")
}
