// Command cairn runs Cairn: a document database that speaks the MongoDB wire
// protocol. This package owns the command line (cobra: subcommands, mongod's
// flags), signals and the process lifecycle; the options themselves and
// mongod's config file are internal/config's, everything else lives in
// other internal packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is Cairn's own version (MongoDB-compatible version numbers are the
// server's business: see buildInfo).
var version = "0.1.0-dev"

// usageError is a mistake on the command line: exit status 2, with a
// pointer to --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// exitCode is a failure that has been reported already: exit with code.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the process's exit status.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	if len(args) == 0 {
		root.SetOut(stderr)
		_ = root.Help()
		return 2
	}
	root.SetArgs(goStyleFlags(root, args))
	cmd, err := root.ExecuteC()
	var code exitCode
	var uerr usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &uerr) || strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return 1
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "cairn",
		Short: "Cairn is a document database that speaks the MongoDB wire protocol.",
		Long: `Cairn is a document database that speaks the MongoDB wire protocol:
mongosh, the official drivers and the tools built on them connect to it
unchanged. 'cairn serve' takes mongod's flags and config file.`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("cairn {{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(serveCommand(stdout, stderr), backupCommand(stdout), adviseCommand(stdout), benchCommand(stdout, stderr), clusterCommand(stdout, stderr), routerCommand(stdout, stderr), &cobra.Command{
		Use:   "version",
		Short: "Print Cairn's version",
		Args:  noArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), "cairn", version) },
	})
	return root
}

// noArgs refuses positional arguments with the first one named.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

// goStyleFlags accepts the Go-style single-dash long flags (-port 27017)
// that Cairn's first command line took, by giving them their second dash.
// Only names of the subcommand's long flags are rewritten, so -f and -v keep
// their meaning.
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root || cmd.DisableFlagParsing {
		return args
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if f := cmd.Flags().Lookup(name); f != nil && len(name) > 1 {
			out[i] = "-" + a
		}
	}
	return out
}
