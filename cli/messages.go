package cli

import (
	"errors"
	"io/fs"
	"regexp"
	"strings"
)

// packagePrefix matches the "pkg: " that the module's packages put before their errors (and
// before those they pass on): words about the code, not about the user's input.
var packagePrefix = regexp.MustCompile(`(^|: )(?:advise|cuda|dataset|featurestore|fusefs|gpuio|ingest|placement|topology|tiers|host|ssd|gpu|sysinfo): `)

// textPathError matches an *fs.PathError's "open PATH: " inside a message.
var textPathError = regexp.MustCompile(`(^|: )(open|read|write|create) (\S+): `)

// userMessage is err as the CLI prints it: about the user's input, without the package prefixes
// of the code that found the problem, and with a file operation that failed said in words
// ("cannot open nope.npy: no such file or directory" for "open nope.npy: no such file or
// directory"; a stat that failed is the path and why).
func userMessage(err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		raw := pe.Error()
		said := "cannot " + pe.Op + " " + pe.Path + ": " + pe.Err.Error()
		switch pe.Op {
		case "stat", "lstat", "statx":
			said = pe.Path + ": " + pe.Err.Error()
		case "mkdir", "mkdirat":
			said = "cannot make the directory " + pe.Path + ": " + pe.Err.Error()
		}
		msg = strings.Replace(msg, raw, said, 1)
	} else {
		// The same for a file error passed on as text (%v), its path without spaces.
		msg = textPathError.ReplaceAllString(msg, "${1}cannot $2 $3: ")
	}
	for {
		stripped := packagePrefix.ReplaceAllString(msg, "$1")
		if stripped == msg {
			return msg
		}
		msg = stripped
	}
}
