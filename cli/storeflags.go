package cli

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
)

// storeFlags registers a flag for every store option on fs, named as the option's JSON name with
// '-' for '_' (featurestore.Options), and returns the options they set. Every command that opens
// a store calls it, so every command reaches every option; the core validates the values when
// the store opens. storeflags_test.go checks both against Options itself.
func storeFlags(fs *flag.FlagSet) *featurestore.Options {
	opt := &featurestore.Options{}
	fs.StringVar(&opt.Feature, "feature", "", "feature to serve (default: the first)")
	fs.Var((*sizeFlag)(&opt.HostCacheBytes), "host-cache", "host tier size, e.g. 512MB or 4GiB (default: none)")
	fs.StringVar(&opt.HostPolicy, "host-policy", "", "host tier policy: static (placed once; the default) or sieve (a cache of the rows read from disk, SIEVE eviction)")
	fs.Var((*topologyMemoryFlag)(&opt.TopologyMemoryBytes), "topology-memory", "hold the topology in memory when it fits this size (default 1GiB); -1 keeps it on disk")
	fs.StringVar((*string)(&opt.IOBackend), "io-backend", "", "io_uring, pread or gpu-uring (GPU-submitted reads for device gathers; default: io_uring where it works, else pread)")
	fs.IntVar(&opt.QueueDepth, "queue-depth", 0, fmt.Sprintf("reads in flight per IO stack (default %d)", featurestore.DefaultQueueDepth))
	fs.IntVar(&opt.QueueDepth, "qd", 0, "short for --queue-depth")
	fs.IntVar(&opt.MaxConcurrentIO, "max-concurrent-io", 0, "IO stacks: gathers reading the disk at once (default: one per CPU)")
	fs.BoolVar(&opt.VerifyReads, "verify-reads", false, "check every block read from disk against its checksum")
	fs.IntVar(&opt.CoalesceGap, "coalesce-gap", 0, "read disk ranges of a file at most this many bytes apart as one read (default 0: only touching blocks); -1 probes the disk at open (see tierfs bench disk)")
	fs.IntVar(&opt.ReadAlign, "read-align", 0, "alignment of disk reads (default 0: the dataset's block size); -1: the smallest the files' direct IO allows, e.g. 512")
	fs.IntVar(&opt.CopyWorkers, "copy-workers", 0, "goroutines copying host-tier rows (default: one per CPU)")
	fs.IntVar(&opt.GPUDevice, "gpu-device", 0, "CUDA device of the GPU tier, device gathers and GPU sampling")
	fs.Var((*sizeFlag)(&opt.GPUCacheBytes), "gpu-cache", "GPU tier size in device memory, e.g. 8GiB (default: none; without a GPU the store serves from the host)")
	fs.StringVar(&opt.GPUTopology, "gpu-topology", "", "sample on the GPU with the topology in device or pinned (host) memory (default: sample on the host)")
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
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	storeFlags(fs)
	if fs.Lookup(name) == nil {
		return option
	}
	return "--" + name
}

// setFlags are the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// topologyMemoryFlag is a byte size, or a negative number to keep the topology on disk.
type topologyMemoryFlag int64

func (t *topologyMemoryFlag) String() string { return strconv.FormatInt(int64(*t), 10) }
func (t *topologyMemoryFlag) Set(v string) error {
	if strings.HasPrefix(strings.TrimSpace(v), "-") {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is neither a size nor a negative number", v)
		}
		*t = topologyMemoryFlag(n)
		return nil
	}
	n, err := parseSize(v)
	*t = topologyMemoryFlag(n)
	return err
}
