// Package cli is the tierfs command: it makes, inspects and serves tierfs datasets. Main runs
// it; cmd/tierfs is the binary (the Python package ships it and its console script runs it). The
// C library (capi) does not link this package.
//
//	tierfs synth   [--preset P [--scale S]] --nodes N --avg-degree D --dim F [--dtype T] [--classes C] [--degree-exponent G] [--locality P [--community-size C]] [--report] --seed S --out DIR  [--force]
//	tierfs ingest  --edges E --features F [--labels L] [--splits DIR] [--store-dtype float16|bfloat16] --out DIR [--device-path P ...] [--force]
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
//	tierfs bench train DIR [--models sage,gcn] [--fanouts 25,10/15,10,5] [--batch-sizes 1024,8000] [--json F] [--plots DIR]  (Python: python/bench/benchtrain.py, in a source tree)
//	tierfs place   DIR --fanouts 10,5 --batch-size N --host-cache BYTES [--gpu-cache BYTES] [--policy P] [--batches N] [--recompute] [--json] [STORE FLAGS]
//	tierfs advise  DIR --ssd-price P --machine-price P [--fanouts 10,5] [--batch-size N] [--measure] [--json] [--plot F.png] [STORE FLAGS]
//	tierfs mount   DIR MOUNTPOINT [--placement] [--foreground] [STORE FLAGS]
//	tierfs umount  MOUNTPOINT
//	tierfs completion bash|zsh|fish
//	tierfs --version
//
// The commands are cobra commands with GNU flags (--flag VALUE, --flag=VALUE; Go's -flag still
// parses: gnuArgs), made from the commands table: each has one define function that registers
// its flags and returns what runs it with its named arguments. A mistake in the command line
// prints one line naming it and a pointer to the command's --help, and exits 2; a command that
// fails prints "tierfs CMD: what went wrong" and exits 1.
//
// The store flags are every option of featurestore.Options, named after its JSON name
// (storeflags.go): --feature, --host-cache, --host-policy, --topology-memory, --io-backend,
// --queue-depth (--qd), --max-concurrent-io, --unverified-reads, --copy-workers, --gpu-device,
// --gpu-cache, --gpu-topology.
//
// TIERFS_FAULTS, for tests, injects IO faults under every store a command opens (openStore,
// storeflags.go); its rules are gpuio.ParseFaults', e.g. TIERFS_FAULTS='eio:every=3' tierfs gather ….
package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/ingest"
	"github.com/tierfs/tierfs/placement"
)

// runFunc runs a command with its positional arguments, its flags already parsed.
type runFunc func(args []string) error

// commandSpec is one command: use is its name and its named arguments ("mount DIR MOUNTPOINT";
// "[OUT]" is optional), define registers its flags and returns what runs it.
type commandSpec struct {
	use, short string
	define     func(fs *pflag.FlagSet) runFunc
}

// commands are tierfs's commands, in the order `tierfs --help` lists them; benchCommands are
// `tierfs bench`'s. A new command is a line here and its define function.
var commands = []commandSpec{
	{"synth", "make a deterministic power-law graph with features and labels", synthCmd},
	{"ingest [OUT]", "turn edges and features (Parquet, Arrow IPC, .npy) into a dataset", ingestCmd},
	{"info DIR", "print what a dataset holds", infoCmd},
	{"verify DIR", "check every block of a dataset against its checksum", verifyCmd},
	{"upgrade DIR", "rewrite a dataset of an older format version to the current one, in place", upgradeCmd},
	{"gather DIR", "write the feature rows of ids.npy to out.npy", gatherCmd},
	{"sample DIR", "sample k-hop neighborhoods of seeds.npy into a directory of .npy files", sampleCmd},
	{"plan-epochs DIR", "sample K epochs ahead and pack each batch's disk rows contiguously (planned epochs)", planEpochsCmd},
	{"place DIR", "profile, plan and save the dataset's topology+feature placement; compare policies", placeCmd},
	{"advise DIR", "predict seeds/s and seeds/s per dollar for 1..N SSDs (Hyperion's TPC model)", adviseCmd},
	{"mount DIR MOUNTPOINT", "mount a read-only view of a dataset's tiers (FUSE)", mountCmd},
	{"umount MOUNTPOINT", "unmount a tierfs mount", umountCmd},
}

var benchCommands = []commandSpec{
	{"gather DIR", "gather throughput per tier configuration", benchGatherCmd},
	{"gpu DIR", "the GPU path: GPU tier, UVA host tier, SSD to GPU, mixed", benchGPUCmd},
	{"placement DIR", "held-out SSD rows per batch of each placement policy", benchPlacementCmd},
	{"disk DIR", "random reads of the dataset's disk, and the coalescing gap worth bridging", benchDiskCmd},
	{"fill DIR", "the memory tiers' fill from the disk, beside a sequential pass over the feature file", benchFillCmd},
	{"reads DIR", "on-demand gathers' disk reads alone: reads/s with 1..N gathers in flight", benchReadsCmd},
	{"io", "the IO engine beside liburing's iobench", benchIOCmd},
}

// newRoot builds the command tree: the commands, `bench` and its benchmarks, `completion` (bash,
// zsh, fish, powershell: cobra's) and `help`.
func newRoot() *cobra.Command {
	cobra.EnableCommandSorting = false // in the order of commands
	root := &cobra.Command{
		Use:           "tierfs",
		Short:         "make, inspect and serve tierfs datasets",
		Version:       Version,
		Args:          cobra.ArbitraryArgs,
		RunE:          func(c *cobra.Command, args []string) error { return unknownSubcommand(c, args) },
		SilenceErrors: true,
		SilenceUsage:  true,
		// An unknown command's own flags do not hide that the command is unknown.
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
	}
	root.SetVersionTemplate("tierfs {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	for _, spec := range commands {
		root.AddCommand(newCommand(spec, ""))
	}
	bench := &cobra.Command{
		Use:                "bench",
		Short:              "benchmarks: bench gather|gpu|placement|disk|fill|reads|train DIR, bench io --files A,B",
		Args:               cobra.ArbitraryArgs,
		RunE:               unknownSubcommand,
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
	}
	for _, spec := range benchCommands {
		bench.AddCommand(newCommand(spec, "bench "))
	}
	bench.AddCommand(&cobra.Command{
		Use:                "train [ARGS...]",
		Short:              "end-to-end GNN training seeds/s of every feature path (python/bench/benchtrain.py of a source tree; --help lists its flags)",
		DisableFlagParsing: true, // its flags are the Python module's
		RunE:               func(_ *cobra.Command, args []string) error { return runBenchTrain(args) },
	})
	root.AddCommand(bench)
	root.AddCommand(&cobra.Command{Use: "version", Short: "print the version", Args: cobra.NoArgs,
		Run: func(*cobra.Command, []string) { fmt.Printf("tierfs %s\n", Version) }})
	return root
}

// newCommand makes spec's command; prefix is its parent's path below tierfs ("bench ").
func newCommand(spec commandSpec, prefix string) *cobra.Command {
	names := strings.Fields(spec.use)[1:]
	cmd := &cobra.Command{Use: spec.use, Short: spec.short, Args: namedArgs(names)}
	run := spec.define(cmd.Flags())
	cmd.RunE = func(_ *cobra.Command, args []string) error { return run(args) }
	if h, ok := commandHelp[prefix+cmd.Name()]; ok {
		cmd.Long = h.what
		cmd.Example = "  " + strings.Join(h.examples, "\n  ")
	}
	for name, choices := range flagChoices() {
		if cmd.Flags().Lookup(name) != nil {
			cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) < len(names) && strings.Trim(names[len(args)], "[]") != "OUT" {
			return nil, cobra.ShellCompDirectiveFilterDirs // a dataset or a mount point
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
	return cmd
}

// flagChoices are the values that complete a flag of that name on any command that has one.
func flagChoices() map[string][]string {
	var policies []string
	for _, p := range placement.Policies() {
		policies = append(policies, p.String())
	}
	return map[string][]string{
		"io-backend":   {string(gpuio.BackendIOUring), string(gpuio.BackendPread), string(gpuio.BackendGPUURing)},
		"host-policy":  {featurestore.HostStatic, featurestore.HostSieve},
		"gpu-topology": {featurestore.GPUTopologyDevice, featurestore.GPUTopologyPinned},
		"preset":       slices.Concat(ingest.SynthPresetNames(), ingest.SynthHeteroPresetNames()),
		"policy":       policies,
		"dtype":        {"float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64"},
		"neg-sampling": {"binary", "triplet"},
		"mode":         {"serial", "overlapped"},
	}
}

// namedArgs checks the positional arguments against their names: NAME is required, [NAME]
// optional; a usage error names the one missing or the first one too many.
func namedArgs(names []string) cobra.PositionalArgs {
	required := 0
	for _, n := range names {
		if !strings.HasPrefix(n, "[") {
			required++
		}
	}
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < required {
			return usageErrorf("missing %s", strings.Join(names[len(args):required], " "))
		}
		if len(args) > len(names) {
			takes := "no arguments besides flags"
			if len(names) > 0 {
				takes = strings.Join(names, " ") + " besides flags"
			}
			return usageErrorf("unexpected argument %q (takes %s)", args[len(names)], takes)
		}
		return nil
	}
}

// unknownSubcommand is what a command with subcommands (tierfs, bench) does with an argument
// that names none of them: a usage error suggesting the closest.
func unknownSubcommand(c *cobra.Command, args []string) error {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if len(args) == 0 {
		return usageErrorf("missing the command: one of %s", strings.Join(names, ", "))
	}
	return usageErrorf("unknown command %q%s", args[0], didYouMean(args[0], names))
}

// usageError is a mistake in the command line (a flag or argument); Main prints it with a
// pointer to --help and exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// flagError rewords pflag's parse errors as the user's input: the flag as given, a suggestion
// for an unknown one, the value and what it should be for a bad one.
func flagError(c *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var noValue *pflag.ValueRequiredError
	switch {
	case errors.As(err, &notExist):
		name := notExist.GetSpecifiedName()
		if name == "" {
			return usageErrorf("unknown flag -%s", notExist.GetSpecifiedShortnames())
		}
		var defined []string
		c.Flags().VisitAll(func(f *pflag.Flag) { defined = append(defined, f.Name) })
		suggestion := ""
		if s := didYouMean(name, defined); s != "" {
			suggestion = strings.Replace(s, fmt.Sprintf("%q", strings.Split(s, `"`)[1]), "--"+strings.Split(s, `"`)[1], 1)
		}
		return usageErrorf("unknown flag --%s%s", name, suggestion)
	case errors.As(err, &invalid):
		return usageErrorf("--%s %q: %s", invalid.GetFlag().Name, invalid.GetValue(), valueProblem(errors.Unwrap(invalid)))
	case errors.As(err, &noValue):
		return usageErrorf("--%s needs a value", noValue.GetFlag().Name)
	}
	return usageError{err}
}

// valueProblem says what is wrong with a flag's value without strconv's prefix.
func valueProblem(err error) string {
	var num *strconv.NumError
	if errors.As(err, &num) {
		if errors.Is(num.Err, strconv.ErrRange) {
			return "out of range"
		}
		return "not a number of the flag's kind (" + strings.ToLower(strings.TrimPrefix(num.Func, "Parse")) + ")"
	}
	return err.Error()
}

// gnuArgs rewrites the single-dash long flags in args (-nodes 5, -out=DIR: Go's flag package
// took them) as GNU ones (--nodes) for the command args run; a value after a flag that takes one
// is left alone.
func gnuArgs(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.DisableFlagParsing {
		return args
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		body, ok := strings.CutPrefix(a, "--")
		if !ok {
			if len(a) < 3 || a[0] != '-' || a[1] < 'a' || a[1] > 'z' {
				continue
			}
			body = a[1:]
			out[i] = "-" + a
		}
		name, _, hasValue := strings.Cut(body, "=")
		if f := cmd.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" && !hasValue {
			i++ // its value
		}
	}
	return out
}

// Main runs the command line args (args[0] is the program's name, as in os.Args) and returns
// the process exit status: 0, 1 when the command failed, 2 for a usage error.
func Main(args []string) int {
	root := newRoot()
	if len(args) < 2 {
		root.SetOut(os.Stderr)
		root.Usage()
		return 2
	}
	root.SetArgs(gnuArgs(root, args[1:]))
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	}
	var oe *featurestore.OptionError
	if errors.As(err, &oe) {
		oe.Option = optionFlagName(oe.Option) // name the flag the user gave
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", cmd.CommandPath(), userMessage(err))
	return 1
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

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
func (l *listFlag) Type() string       { return "string" }

// sizeFlag is a byte size flag accepting 512MB, 4GiB, 1.5G and plain bytes.
type sizeFlag int64

func (s *sizeFlag) String() string { return fmt.Sprint(int64(*s)) }
func (s *sizeFlag) Type() string   { return "size" }
func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	*s = sizeFlag(n)
	return err
}
