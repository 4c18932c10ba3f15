package cli

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/featurestore"
)

// optionFlags registers a flag for every option of T's table (featurestore.TableOf) on fs but
// those named in skip: the option's FlagName, its help, its default (the table's; the zero value
// without one), a size ("4GiB", or a negative number for the core to judge) for kind "size".
// Options of kind "map" have no flag. It returns the T the flags set, holding the defaults until
// the command line is parsed; the core validates the values. Every option family's flags are
// made here (store options: storeFlags; plan options: plan-epochs; link options: linkFlags), and
// optionflags_test.go checks every option of every family has its flag.
func optionFlags[T any](fs *pflag.FlagSet, skip ...string) *T {
	opt := new(T)
	featurestore.SetDefaults(opt)
	v := reflect.ValueOf(opt).Elem()
	for _, o := range featurestore.TableOf[T]() {
		if o.Kind == "map" || slices.Contains(skip, o.Name) {
			continue
		}
		name := o.FlagName()
		field := v.FieldByIndex(o.Index())
		if field.Kind() == reflect.String { // string and named string types (gpuio.Backend, topology.NegativeMode)
			p := (*string)(field.Addr().UnsafePointer())
			fs.StringVar(p, name, *p, o.Help)
			continue
		}
		switch p := field.Addr().Interface().(type) {
		case *int64:
			if o.Kind == "size" {
				fs.Var((*sizeOptionFlag)(p), name, o.Help)
			} else {
				fs.Int64Var(p, name, *p, o.Help)
			}
		case *int:
			fs.IntVar(p, name, *p, o.Help)
		case *uint64:
			fs.Uint64Var(p, name, *p, o.Help)
		case *float64:
			fs.Float64Var(p, name, *p, o.Help)
		case *bool:
			fs.BoolVar(p, name, *p, o.Help)
		default:
			panic(fmt.Sprintf("optionFlags: option %s has Go type %T, which has no flag kind", o.Name, p))
		}
	}
	return opt
}
