// Package cli is the tierfs command: it makes, inspects and serves tierfs datasets. Main runs
// it; cmd/tierfs (the binary) and capi's tfs_cli_main (the Python console script) call it.
//
//	tierfs synth   [--preset P [--scale S]] --nodes N --avg-degree D --dim F [--dtype T] [--classes C] [--degree-exponent G] [--locality P [--community-size C]] [--report] --seed S --out DIR  [--force]
//	tierfs ingest  --edges E --features F [--labels L] [--splits DIR] --out DIR [--device-path P ...] [--force]
//	tierfs info    DIR
//	tierfs verify  DIR
//	tierfs gather  DIR --ids ids.npy --out out.npy [--placement] [STORE FLAGS]
//	tierfs sample  DIR --seeds ids.npy --fanouts 25,10 --out DIR2 [--placement] [STORE FLAGS]
//	tierfs bench gather DIR [--batch N] [--batches N] [--dist powerlaw] [--placement] [STORE FLAGS]
//	tierfs bench gpu DIR [--kernels] [STORE FLAGS]
//	tierfs bench placement DIR [--fanouts 25,10] [--batch-size 1024] [STORE FLAGS]
//	tierfs bench disk DIR [--qd N] [--read-align N] [--json FILE]
//	tierfs bench reads DIR [--gathers 1,2,4,8] [--batch N] [--qd N]
//	tierfs bench io --files A,B [--threads 1,4,8,16] [--qd N] [--seconds S] [--iobench PATH] [--sqpoll] [--json FILE]
//	tierfs bench train DIR [--models sage,gcn] [--fanouts 25,10/15,10,5] [--batch-sizes 1024,8000] [--json F] [--plots DIR]  (Python: tierfs.benchtrain)
//	tierfs place   DIR --fanouts 10,5 --batch-size N --host-cache BYTES [--gpu-cache BYTES] [--policy P] [--batches N] [--recompute] [--json] [STORE FLAGS]
//	tierfs advise  DIR --ssd-price P --machine-price P [--fanouts 10,5] [--batch-size N] [--measure] [--json] [--plot F.png] [STORE FLAGS]
//	tierfs mount   DIR MOUNTPOINT [--placement] [--foreground] [STORE FLAGS]
//	tierfs umount  MOUNTPOINT
//	tierfs --version
//
// The store flags are every option of featurestore.Options, named after its JSON name
// (storeflags.go): --feature, --host-cache, --host-policy, --topology-memory, --io-backend,
// --queue-depth (--qd), --max-concurrent-io, --verify-reads, --copy-workers, --gpu-device,
// --gpu-cache, --gpu-topology.
//
// TIERFS_FAULTS, for tests, injects IO faults under every store a command opens (openStore,
// storeflags.go); its rules are gpuio.ParseFaults', e.g. TIERFS_FAULTS='eio:every=3' tierfs gather ….
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tierfs/tierfs/featurestore"
)

type command struct {
	name, usage string
	run         func(args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"synth", "make a deterministic power-law graph with features and labels", runSynth},
		{"ingest", "turn edges and features (Parquet, Arrow IPC, .npy) into a dataset", runIngest},
		{"info", "print what a dataset holds", runInfo},
		{"verify", "check every block of a dataset against its checksum", runVerify},
		{"gather", "write the feature rows of ids.npy to out.npy", runGather},
		{"sample", "sample k-hop neighborhoods of seeds.npy into a directory of .npy files", runSample},
		{"plan-epochs", "sample K epochs ahead and pack each batch's disk rows contiguously (planned epochs)", runPlanEpochs},
		{"bench", "benchmarks: bench gather|gpu|placement|disk|train DIR, bench io --files A,B", runBench},
		{"place", "profile, plan and save the dataset's topology+feature placement; compare policies", runPlace},
		{"advise", "predict seeds/s and seeds/s per dollar for 1..N SSDs (Hyperion's TPC model)", runAdvise},
		{"mount", "mount a read-only view of a dataset's tiers (FUSE)", runMount},
		{"umount", "unmount a tierfs mount", runUmount},
		{"completion", "print a shell completion script: source <(tierfs completion bash)", runCompletion},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: tierfs COMMAND [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", c.name, c.usage)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'tierfs COMMAND -h' for a command's flags; 'tierfs --version' prints the version.\n")
}

// Self names the program that runs this CLI again (mount's background server). It is the running
// binary by default; capi's tfs_cli_main, which runs the CLI inside the caller's process (the
// Python console script), sets it to the caller's argv[0].
var Self = os.Executable

// Main runs the command line args (args[0] is the program's name, as in os.Args) and returns
// the process exit status: 0, 1 when the command failed, 2 for a usage error.
func Main(args []string) int {
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		usage()
		if len(args) < 2 {
			return 2
		}
		return 0
	}
	if args[1] == "--version" || args[1] == "version" {
		fmt.Printf("tierfs %s\n", Version)
		return 0
	}
	for _, c := range commands {
		if c.name == args[1] {
			err := c.run(args[2:])
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			var oe *featurestore.OptionError
			if errors.As(err, &oe) {
				oe.Option = optionFlagName(oe.Option) // name the flag the user gave
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "tierfs %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	fmt.Fprintf(os.Stderr, "tierfs: unknown command %q%s\n\n", args[1], didYouMean(args[1], names))
	usage()
	return 2
}

// didYouMean is `; did you mean "X"?` for the candidate closest to got (at most two edits, or
// got a prefix of it), else "".
func didYouMean(got string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		d := editDistance(got, c)
		if strings.HasPrefix(c, got) && len(got) >= 2 {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseFlags parses args with fs, allowing flags after positional arguments
// ("tierfs info DIR --json"), and returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
	pos, err := parseFlagsAny(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != positional {
		return nil, fmt.Errorf("want %d argument(s) besides flags, got %d (%s)", positional, len(pos), strings.Join(pos, " "))
	}
	return pos, nil
}

// parseFlagsAny is parseFlags taking any number of arguments besides the flags.
func parseFlagsAny(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(os.Stderr)
	setUsage(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
				var defined []string
				fs.VisitAll(func(f *flag.Flag) { defined = append(defined, f.Name) })
				return nil, fmt.Errorf("unknown flag --%s%s", name, didYouMean(name, defined))
			}
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return pos, nil
}

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// sizeFlag is a byte size flag accepting 512MB, 4GiB, 1.5G and plain bytes.
type sizeFlag int64

func (s *sizeFlag) String() string { return fmt.Sprint(int64(*s)) }
func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	*s = sizeFlag(n)
	return err
}
