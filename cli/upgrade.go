package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/tierfs/tierfs/dataset"
)

func init() {
	commandHelp["upgrade"] = struct {
		what     string
		examples []string
	}{"Rewrites a dataset of an older format version to the current one in place, after checking every block against its checksum (a damaged dataset is refused); killed at any point it leaves the old or the new dataset, and running it again finishes.", []string{"tierfs upgrade data/g"}}
}

// runUpgrade is `tierfs upgrade DIR` (dataset.Upgrade).
func runUpgrade(args []string) error {
	fs := flag.NewFlagSet("upgrade", flag.ContinueOnError)
	pos, err := parseFlags(fs, args, 1)
	if err != nil {
		return err
	}
	// What killed writes to the dataset left beside it goes first, as in `tierfs verify` (a
	// dataset a killed write had moved aside is put back).
	did, err := dataset.CleanStale(pos[0])
	for _, d := range did {
		fmt.Println("cleaned:", d)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tierfs upgrade: warning: %v\n", err)
	}
	bar := newProgressBar()
	from, err := dataset.Upgrade(pos[0], func(done, total int64) { bar.update("verify", done, total) })
	bar.done()
	if err != nil {
		return err
	}
	if from == dataset.Version {
		fmt.Printf("%s is already format version %d; nothing to upgrade\n", pos[0], from)
		return nil
	}
	fmt.Printf("upgraded %s from format version %d to %d: every block verified, checksums bound to their place\n", pos[0], from, dataset.Version)
	return nil
}
