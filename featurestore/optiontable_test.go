package featurestore

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
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
		listed[o.index[0]] = true
		f := typ.FieldByIndex(o.index)
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
			f := v.FieldByIndex(o.index)
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
		// issue 43: the last of two keys used to win, opening an unverified store
		{`{"unverified_reads": false, "unverified_reads": true}`, "options", `key "unverified_reads" appears twice`},
		{`{"host_cache": 1, "host_cache": 2}`, "options", `key "host_cache" appears twice`},
	} {
		_, err := DecodeOptions([]byte(c.in))
		var oe *OptionError
		if !errors.As(err, &oe) || !errors.Is(err, ErrInvalidOption) || oe.Option != c.option || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeOptions(%s) = %v: want an OptionError on %s saying %q", c.in, err, c.option, c.want)
		}
	}
}

// tableProbe exercises what TableOf reads: an inlined struct, defaults, choices, flag names.
type tableProbe struct {
	Size  int64 `json:"size" kind:"size" default:"4096" help:"s"`
	Inner struct {
		Seed uint64 `json:"seed" default:"7" help:"d"`
		Skip int
	} `options:"inline"`
	Mode  string            `json:"mode" choices:"a|b|" help:"m"`
	Ratio float64           `json:"ratio" flag:"the-ratio" default:"1.5" help:"r"`
	Map   map[string]string `json:"map" kind:"map" help:"p"`
	Data  []int64
}

func TestTableOfReadsTheType(t *testing.T) {
	table := TableOf[tableProbe]()
	if got := strings.Join(Names(table), ","); got != "size,seed,mode,ratio,map" {
		t.Fatalf("names %s", got)
	}
	if table[1].Kind != "uint" || !reflect.DeepEqual(table[1].Index(), []int{1, 0}) || table[3].FlagName() != "the-ratio" || table[0].FlagName() != "size" {
		t.Errorf("table %+v", table)
	}
	d := Defaults[tableProbe]()
	if d.Size != 4096 || d.Inner.Seed != 7 || d.Ratio != 1.5 || d.Mode != "" {
		t.Errorf("defaults %+v", d)
	}
	rest, err := DecodeTable("probe", []byte(`{"seed": 9, "mode": "", "data": [1], "map": {"x": "y"}}`), &d, "data")
	if err != nil || d.Inner.Seed != 9 || d.Size != 4096 || string(rest["data"]) != "[1]" || d.Map["x"] != "y" {
		t.Errorf("decode: %+v, %s, %v", d, rest, err)
	}
	for in, want := range map[string]string{
		`{"mode": "c"}`:  `option mode = "c": want "a", "b" or ""`,
		`{"colour": 1}`:  "one of the probe options size, seed, mode, ratio, map, data",
		`{"seed": -1}`:   "an integer >= 0",
		`{"map": [1]}`:   "an object of strings",
		`{"ratio": "x"}`: "a number",
	} {
		if _, err := DecodeTable("probe", []byte(in), &d, "data"); err == nil || !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeTable(%s) = %v, want an error saying %q", in, err, want)
		}
	}
}

// Every option of every family the front ends read has a help line, a kind they know, and a
// default of its kind (TableOf panics on one it cannot parse).
func TestLinkTableDescribesItself(t *testing.T) {
	for _, o := range TableOf[LinkOptions]() {
		if o.Help == "" || !slices.Contains([]string{"size", "int", "uint", "float", "bool", "string", "map"}, o.Kind) {
			t.Errorf("link option %+v lacks a help line or a known kind", o)
		}
	}
	if d := Defaults[LinkOptions](); d.NegAmount != 1 {
		t.Errorf("the link table's amount defaults to %v; want 1 (PyG's)", d.NegAmount)
	}
}
