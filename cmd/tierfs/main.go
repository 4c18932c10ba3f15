// Command tierfs makes, inspects and serves tierfs datasets; package cli has its commands
// (`tierfs help` lists them).
package main

import (
	"os"

	"github.com/tierfs/tierfs/cli"
)

func main() { os.Exit(cli.Main(os.Args)) }
