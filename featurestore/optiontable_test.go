package featurestore

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tierfs/tierfs/gpuio"
)

// Every option of the table has a help line and a kind its front ends know, and every field of
// Options is an option or Go-only (json:"-").
func TestOptionTableDescribesEveryField(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	listed := map[int]bool{}
	for _, o := range OptionTable() {
		listed[o.field] = true
		f := typ.Field(o.field)
		if o.Help == "" {
			t.Errorf("Options.%s (%s) has no help tag: the CLI's flag and Python's docstring need one", f.Name, o.Name)
		}
		switch o.Kind {
		case "size":
			if f.Type.Kind() != reflect.Int64 {
				t.Errorf("Options.%s is kind size but a %s (sizes are int64 bytes)", f.Name, f.Type)
			}
		case "int", "bool", "string":
		default:
			t.Errorf("Options.%s (%s) has kind %q: want size, int, bool or string", f.Name, o.Name, o.Kind)
		}
	}
	for i := range typ.NumField() {
		if !listed[i] && typ.Field(i).Tag.Get("json") != "-" {
			t.Errorf("Options.%s is neither an option nor json:\"-\"", typ.Field(i).Name)
		}
	}
}

// DecodeOptions of the JSON of random options gives the same options back (Options.String is the
// JSON a front end sends); a null is left out.
func TestDecodeOptionsRoundTrip(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for range 200 {
		var want Options
		v := reflect.ValueOf(&want).Elem()
		for _, o := range OptionTable() {
			if rng.IntN(3) == 0 {
				continue
			}
			f := v.Field(o.field)
			switch f.Kind() {
			case reflect.Int, reflect.Int64:
				f.SetInt(rng.Int64N(1<<40) - 1<<39)
			case reflect.Bool:
				f.SetBool(rng.IntN(2) == 1)
			case reflect.String:
				f.SetString([]string{"", "pinned", "sieve", "x\"y", "gpu-uring"}[rng.IntN(5)])
			}
		}
		got, err := DecodeOptions([]byte(want.String()))
		if err != nil {
			t.Fatalf("DecodeOptions(%s): %v", want.String(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeOptions(%s) = %s", want.String(), got.String())
		}
	}
	got, err := DecodeOptions([]byte(`{"host_cache": null, "io_backend": "pread"}`))
	if err != nil || got.HostCacheBytes != 0 || got.IOBackend != gpuio.BackendPread {
		t.Fatalf("null host_cache: %v, %v", got, err)
	}
	if got, err := DecodeOptions(nil); err != nil || !reflect.DeepEqual(got, Options{}) {
		t.Fatalf("no options: %v, %v", got, err)
	}
}

// An unknown name, a value of the wrong type and JSON that is no object are errors naming them.
func TestDecodeOptionsErrors(t *testing.T) {
	for _, c := range []struct{ in, option, want string }{
		{`{"host_cahce": 5}`, "host_cahce", "one of the store options feature, host_cache"},
		{`{"queue_depth": "deep"}`, "queue_depth", "an integer"},
		{`{"host_cache": "4GiB"}`, "host_cache", "a byte count"},
		{`{"unverified_reads": 1}`, "unverified_reads", "true or false"},
		{`{"hotness": [1, 2]}`, "hotness", "one of the store options"},
		{`[1]`, "options", "a JSON object"},
	} {
		_, err := DecodeOptions([]byte(c.in))
		var oe *OptionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption) || oe.Option != c.option || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeOptions(%s) = %v: want an OptionError on %s saying %q", c.in, err, c.option, c.want)
		}
	}
}
