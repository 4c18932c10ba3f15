package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/dataset"
)

// upgradeCmd is `tierfs upgrade DIR` (dataset.Upgrade).
func upgradeCmd(*pflag.FlagSet) runFunc {
	return func(pos []string) error {
		// What killed writes to the dataset left beside it goes first, as in `tierfs verify` (a
		// dataset a killed write had moved aside is put back).
		did, err := dataset.CleanStale(pos[0])
		for _, d := range did {
			fmt.Println("cleaned:", d)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tierfs upgrade: warning: %s\n", userMessage(err))
		}
		bar := newProgressBar()
		from, err := dataset.Upgrade(pos[0], func(done, total int64) { bar.update("verify", done, total) })
		bar.done()
		if err != nil {
			return err
		}
		if from >= dataset.Version {
			fmt.Printf("%s is already format version %d; nothing to upgrade\n", pos[0], from)
			return nil
		}
		fmt.Printf("upgraded %s from format version %d to %d: every block verified, checksums bound to their place and to how each file is read\n", pos[0], from, dataset.Version)
		return nil
	}
}
