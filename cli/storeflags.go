package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
)

// storeFlags registers a flag for every store option on fs, made from featurestore.OptionTable
// (optionFlags), and returns the options they set. Every command that opens a store calls it, so
// every command reaches every option; the core validates the values when the store opens.
// storeflags_test.go checks both against Options itself.
func storeFlags(fs *pflag.FlagSet) *featurestore.Options {
	opt := optionFlags[featurestore.Options](fs)
	fs.IntVar(&opt.QueueDepth, "qd", 0, "short for --queue-depth")
	return opt
}

// faultsEnv is the environment variable whose rules (gpuio.ParseFaults, e.g.
// "eio:every=3;flip:prob=0.01:seed=7" or "flip:path=epoch-") inject IO faults under every store
// a command opens, its planned epochs' packed files included: for testing what a pipeline does
// with them. The CLI, a front end, reads it; the core takes the injector in Options.Faults.
const faultsEnv = "TIERFS_FAULTS"

// openStore opens the store of dir as every command does: featurestore.Open with opt, and with
// the fault injector of TIERFS_FAULTS (faultsEnv) when it is set; a bad value is an error naming
// it. Each store gets its own injector, so rules count the reads of that store.
func openStore(dir string, opt featurestore.Options) (*featurestore.Store, error) {
	f, err := gpuio.ParseFaults(os.Getenv(faultsEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", faultsEnv, err)
	}
	if f != nil {
		opt.Faults = f
	}
	return featurestore.Open(dir, opt)
}

// optionFlagName is the flag of a store option's JSON name ("host_cache" → "--host-cache"), or
// the name itself when no store flag has it.
func optionFlagName(option string) string {
	name := strings.ReplaceAll(option, "_", "-")
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	storeFlags(fs)
	if fs.Lookup(name) == nil {
		return option
	}
	return "--" + name
}

// setFlags are the names of the flags given on the command line.
func setFlags(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// sizeOptionFlag is a byte size, or a negative number (topology_memory's "keep it on disk"; the
// core refuses one where an option takes none).
type sizeOptionFlag int64

func (t *sizeOptionFlag) String() string { return strconv.FormatInt(int64(*t), 10) }
func (t *sizeOptionFlag) Type() string   { return "size" }
func (t *sizeOptionFlag) Set(v string) error {
	if strings.HasPrefix(strings.TrimSpace(v), "-") {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is neither a size nor a negative number", v)
		}
		*t = sizeOptionFlag(n)
		return nil
	}
	n, err := parseSize(v)
	*t = sizeOptionFlag(n)
	return err
}
