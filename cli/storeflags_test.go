package cli

import (
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
)

// storeOptionFlags are the flag names of every store option: featurestore.Options' JSON names
// with '-' for '_', read from the type itself so that a new option cannot be forgotten.
func storeOptionFlags(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	typ := reflect.TypeFor[featurestore.Options]()
	for i := range typ.NumField() {
		name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		if name == "" {
			t.Fatalf("featurestore.Options.%s has no json name", typ.Field(i).Name)
		}
		if name != "-" {
			out[strings.ReplaceAll(name, "_", "-")] = i
		}
	}
	return out
}

// Every store option has a flag, and the flag sets that option.
func TestStoreFlagsSetEveryOption(t *testing.T) {
	for name, field := range storeOptionFlags(t) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		opt := storeFlags(fs)
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("storeFlags has no --%s", name)
			continue
		}
		value := map[reflect.Kind]string{reflect.String: "pinned", reflect.Int: "3", reflect.Int64: "3", reflect.Bool: "true"}[reflect.TypeFor[featurestore.Options]().Field(field).Type.Kind()]
		if name == "io-backend" {
			value = "pread"
		}
		if err := fs.Parse([]string{"--" + name + "=" + value}); err != nil {
			t.Errorf("--%s=%s: %v", name, value, err)
			continue
		}
		if reflect.ValueOf(*opt).Field(field).IsZero() {
			t.Errorf("--%s=%s left its option zero: %v", name, value, opt)
		}
	}
}

// storeCommands are the commands that open a store (their arguments before the flags).
var storeCommands = [][]string{{"gather"}, {"sample"}, {"bench", "gather"}, {"bench", "gpu"}, {"place"}, {"advise"}, {"mount"}}

// commandFlags returns the flags of the command args name.
func commandFlags(t *testing.T, args []string) map[string]bool {
	t.Helper()
	cmd, rest, err := newRoot().Find(args)
	if err != nil || len(rest) > 0 {
		t.Fatalf("no command %q: %v", args, err)
	}
	flags := map[string]bool{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
	return flags
}

// Every command that opens a store reaches every store option, and a command that takes any
// store flag takes them all.
func TestEveryStoreCommandHasEveryStoreFlag(t *testing.T) {
	want := storeOptionFlags(t)
	all := append([][]string(nil), storeCommands...)
	opens := len(all)
	for _, c := range commands {
		name := strings.Fields(c.use)[0]
		listed := false
		for _, s := range storeCommands {
			listed = listed || (len(s) == 1 && s[0] == name)
		}
		if !listed {
			all = append(all, []string{name})
		}
	}
	for i, args := range all {
		got := commandFlags(t, args)
		var missing, present []string
		for name := range want {
			if got[name] {
				present = append(present, name)
			} else {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		if (i < opens || len(present) > 0) && len(missing) > 0 {
			t.Errorf("tierfs %s lacks the store flags %v", strings.Join(args, " "), missing)
		}
	}
}

func TestOptionFlagName(t *testing.T) {
	for option, want := range map[string]string{"host_cache": "--host-cache", "io_backend": "--io-backend", "fanouts[1]": "fanouts[1]", "workers": "workers"} {
		if got := optionFlagName(option); got != want {
			t.Errorf("optionFlagName(%q) = %q, want %q", option, got, want)
		}
	}
}

// TIERFS_FAULTS is the CLI's to read (openStore): its faults reach the store a command opens,
// and a bad value fails the command naming the variable.
func TestFaultsFromTheEnvironment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := execute([]string{"synth", "--nodes", "200", "--avg-degree", "2", "--dim", "4", "--out", dir}); err != nil {
		t.Fatal(err)
	}
	gather := func() error {
		return execute([]string{"gather", dir, "--ids", "split:train", "--topology-memory", "-1", "--out", filepath.Join(t.TempDir(), "rows.npy")})
	}
	t.Setenv(faultsEnv, "eio:every=1")
	if err := gather(); !errors.Is(err, syscall.EIO) {
		t.Errorf("gather with every read failing: %v, want EIO", err)
	}
	t.Setenv(faultsEnv, "bogus")
	if err := gather(); err == nil || !strings.Contains(err.Error(), "TIERFS_FAULTS") {
		t.Errorf("gather with a bad TIERFS_FAULTS: %v", err)
	}
	t.Setenv(faultsEnv, "")
	if err := gather(); err != nil {
		t.Fatal(err)
	}
}
