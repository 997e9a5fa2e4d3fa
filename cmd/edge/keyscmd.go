package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/partner-edge/partner-edge/edge/keys"
)

// runKeys is "edge keys ...": keys.Command, whose usage errors end the
// program with status 2.
func runKeys(args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	err := keys.Command(args, getenv, stdout, stderr)
	var ue *keys.UsageError
	if errors.As(err, &ue) {
		return &exitError{code: 2, err: ue.Err}
	}
	return err
}

// commandsUsage lists the program's commands: `edge help` prints it, and
// `edge --help` before the settings.
var commandsUsage = []string{
	"usage: edge [flags]         run the edge (no settings: the demo); settings: edge --help",
	"       edge keys COMMAND    manage the key file: add, list, suspend, resume, revoke,",
	"                            rotate, check, new (edge keys --help)",
	"       edge docs build DIR  write the documentation site (edge docs build --help)",
	"       edge pms check ...   check a PMS against docs/pms-api.md (edge pms check --help)",
	"       edge help            this text",
}

// runHelp is "edge help": the commands, and where their flags are told.
func runHelp(stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, strings.Join(commandsUsage, "\n"))
	return err
}
