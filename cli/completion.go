package cli

import (
	"flag"
	"fmt"
	"strings"
)

// runCompletion prints a shell completion script: `source <(tierfs completion bash)`. Commands
// complete from the command list, flags from the command's own -h (so they never drift), and
// everything else as file names.
func runCompletion(args []string) error {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	if pos[0] != "bash" {
		return fmt.Errorf("completion for %q: only bash is supported (source <(tierfs completion bash))", pos[0])
	}
	names := make([]string, 0, len(commands)+1)
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Printf(bashCompletion, strings.Join(names, " "))
	return nil
}

const bashCompletion = `# bash completion for tierfs: source <(tierfs completion bash)
_tierfs() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "%s --version" -- "$cur"))
    return
  fi
  if [[ $cmd == bench && $COMP_CWORD -eq 2 ]]; then
    COMPREPLY=($(compgen -W "gather gpu placement disk io train" -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    local sub=$cmd
    [[ $cmd == bench ]] && sub="bench ${COMP_WORDS[2]}"
    COMPREPLY=($(compgen -W "$(${COMP_WORDS[0]} $sub -h 2>&1 | sed -n 's/^  \(-[A-Za-z0-9-]*\).*/-\1/p')" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _tierfs tierfs
`
