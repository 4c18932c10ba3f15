package cli

import (
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/planned"
)

// familyFlags checks that fs has a flag for every option of T's table (but "map" ones, which
// have none) whose default is the table's.
func familyFlags[T any](t *testing.T, command string, fs *pflag.FlagSet) {
	t.Helper()
	for _, o := range featurestore.TableOf[T]() {
		if o.Kind == "map" {
			continue
		}
		f := fs.Lookup(o.FlagName())
		if f == nil {
			t.Errorf("%s has no --%s for option %s", command, o.FlagName(), o.Name)
			continue
		}
		want := fmt.Sprint(o.Default)
		if o.Default == nil {
			want = map[string]string{"size": "0", "int": "0", "uint": "0", "float": "0", "bool": "false", "string": ""}[o.Kind]
		}
		if f.DefValue != want {
			t.Errorf("%s --%s defaults to %q; the table's default of %s is %q", command, o.FlagName(), f.DefValue, o.Name, want)
		}
	}
}

// Every plan option and every link option is a flag of plan-epochs, with the table's default;
// every link option one of sample.
func TestCommandsHaveEveryOptionFlag(t *testing.T) {
	fs := pflag.NewFlagSet("plan-epochs", pflag.ContinueOnError)
	planEpochsCmd(fs)
	familyFlags[planned.EpochOptions](t, "plan-epochs", fs)
	familyFlags[featurestore.LinkOptions](t, "plan-epochs", fs)
	familyFlags[featurestore.Options](t, "plan-epochs", fs)
	fs = pflag.NewFlagSet("sample", pflag.ContinueOnError)
	sampleCmd(fs)
	familyFlags[featurestore.LinkOptions](t, "sample", fs)
}

// setsEveryOption checks that each flag of optionFlags[T] sets its own option, and only it.
func setsEveryOption[T any](t *testing.T) {
	t.Helper()
	for _, o := range featurestore.TableOf[T]() {
		if o.Kind == "map" {
			continue
		}
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		opt := optionFlags[T](fs)
		before := *opt
		value := map[string]string{"size": "3MiB", "int": "3", "uint": "3", "float": "2.5", "bool": fmt.Sprint(o.Default != true), "string": "x"}[o.Kind]
		if len(o.Choices) > 0 {
			value = o.Choices[0]
		}
		if err := fs.Parse([]string{"--" + o.FlagName() + "=" + value}); err != nil {
			t.Errorf("--%s=%s: %v", o.FlagName(), value, err)
			continue
		}
		got := reflect.ValueOf(opt).Elem().FieldByIndex(o.Index())
		if reflect.DeepEqual(got.Interface(), reflect.ValueOf(before).FieldByIndex(o.Index()).Interface()) {
			t.Errorf("--%s=%s left option %s at %v", o.FlagName(), value, o.Name, got)
		}
		reflect.ValueOf(&before).Elem().FieldByIndex(o.Index()).Set(got)
		if !reflect.DeepEqual(before, *opt) {
			t.Errorf("--%s=%s set more than option %s: %+v", o.FlagName(), value, o.Name, *opt)
		}
	}
}

func TestOptionFlagsSetTheirOption(t *testing.T) {
	setsEveryOption[planned.EpochOptions](t)
	setsEveryOption[featurestore.LinkOptions](t)
	setsEveryOption[featurestore.Options](t)
}
