package featurestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/tierfs/tierfs/internal/strictjson"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// OptionInfo describes one option of a family (the store's Options, planned.EpochOptions,
// HeteroLinkOptions): a field of the family's type with a json name, read by TableOf.
type OptionInfo struct {
	Name string `json:"name"` // the JSON name: Python's keyword, the CLI's flag with '-' for '_'
	// Kind is "size" (a byte count; front ends also take "4GiB"), "int", "uint" (64 bits, e.g. a
	// seed), "float", "bool", "string" or "map" (an object of strings; no CLI flag).
	Kind string `json:"kind"`
	// Default is the value a front end gives the option when its user gives none (the default
	// tag; nil: the zero value, which the core reads as its own default where it has one).
	Default any `json:"default,omitempty"`
	// Choices are the values a string option takes (the choices tag, "|"-separated; "" among
	// them when an empty string is one); nil: any string.
	Choices []string `json:"choices,omitempty"`
	// Flag is the CLI's flag name where it is not Name with '-' for '_' (the flag tag).
	Flag  string `json:"flag,omitempty"`
	Help  string `json:"help"` // one line for a user
	index []int  // the field's index path in the family's type
}

// FlagName is the option's CLI flag, without "--".
func (o OptionInfo) FlagName() string {
	if o.Flag != "" {
		return o.Flag
	}
	return strings.ReplaceAll(o.Name, "_", "-")
}

// Index is the option's field index path in its family's type, for reflect.Value.FieldByIndex.
func (o OptionInfo) Index() []int { return o.index }

// TableOf lists the options of T in the order of its fields, read from the type itself: a field
// is an option when its json tag names it (not "-"); kind is its kind tag or the Go kind, help
// its help tag, Default its default tag, Choices its choices tag and Flag its flag tag. A struct field tagged
// options:"inline" lends its own options, in place. So a new tagged field is a new option in
// every front end: the CLI's flags, the C ABI's JSON and Python's keywords read this table.
// It panics on a default tag its kind cannot parse (a programming error the tests catch).
func TableOf[T any]() []OptionInfo { return tableOf(reflect.TypeFor[T](), nil) }

func tableOf(typ reflect.Type, at []int) []OptionInfo {
	var out []OptionInfo
	for i := range typ.NumField() {
		f := typ.Field(i)
		index := append(slices.Clone(at), i)
		if f.Tag.Get("options") == "inline" && f.Type.Kind() == reflect.Struct {
			out = append(out, tableOf(f.Type, index)...)
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		kind := f.Tag.Get("kind")
		if kind == "" {
			kind = map[reflect.Kind]string{reflect.Int: "int", reflect.Int64: "int", reflect.Uint64: "uint", reflect.Float64: "float",
				reflect.Bool: "bool", reflect.String: "string"}[f.Type.Kind()]
		}
		o := OptionInfo{Name: name, Kind: kind, Flag: f.Tag.Get("flag"), Help: f.Tag.Get("help"), index: index}
		if c, ok := f.Tag.Lookup("choices"); ok {
			o.Choices = strings.Split(c, "|")
		}
		if d, ok := f.Tag.Lookup("default"); ok {
			v, err := parseDefault(kind, d)
			if err != nil {
				panic(fmt.Sprintf("featurestore: option %s: default %q: %v", name, d, err))
			}
			o.Default = v
		}
		out = append(out, o)
	}
	return out
}

// parseDefault is the value of a default tag for an option of kind.
func parseDefault(kind, d string) (any, error) {
	switch kind {
	case "size", "int":
		return strconv.ParseInt(d, 10, 64)
	case "uint":
		return strconv.ParseUint(d, 10, 64)
	case "float":
		return strconv.ParseFloat(d, 64)
	case "bool":
		return strconv.ParseBool(d)
	case "string":
		return d, nil
	}
	return nil, fmt.Errorf("kind %q takes no default", kind)
}

// Names are the names of table, in its order.
func Names(table []OptionInfo) []string {
	names := make([]string, len(table))
	for i, o := range table {
		names[i] = o.Name
	}
	return names
}

// SetDefaults sets every option of T that has a default (TableOf) to it, in *into.
func SetDefaults[T any](into *T) {
	v := reflect.ValueOf(into).Elem()
	for _, o := range TableOf[T]() {
		if o.Default != nil {
			v.FieldByIndex(o.index).Set(reflect.ValueOf(o.Default).Convert(v.FieldByIndex(o.index).Type()))
		}
	}
}

// Defaults is a T with every option that has a default set to it, the others zero.
func Defaults[T any]() T {
	var t T
	SetDefaults(&t)
	return t
}

// DecodeTable reads the options of T from a JSON object keyed by option name into *into: keys
// left out keep into's value, null is left out. Keys in extra are not options but the caller's
// (e.g. a request's arrays): they come back in rest, undecoded. A key that is neither, or a value
// of the wrong JSON type, or a key given twice (anywhere in data), is an *OptionError naming it, the family ("store", "epochs", "link")
// and its options; a string outside the option's choices too. Values are not otherwise checked.
func DecodeTable[T any](family string, data []byte, into *T, extra ...string) (rest map[string]json.RawMessage, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := strictjson.Unmarshal(data, &fields); err != nil {
		return nil, &OptionError{Option: "options", Value: string(data), Want: fmt.Sprintf("a JSON object of %s options, each key once (%v)", family, err)}
	}
	table := TableOf[T]()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key named is always the same one
	v := reflect.ValueOf(into).Elem()
	for _, k := range keys {
		raw := fields[k]
		if slices.Contains(extra, k) {
			if rest == nil {
				rest = map[string]json.RawMessage{}
			}
			rest[k] = raw
			continue
		}
		i := slices.IndexFunc(table, func(o OptionInfo) bool { return o.Name == k })
		if i < 0 {
			return nil, &OptionError{Option: k, Value: string(raw), Want: fmt.Sprintf("one of the %s options %s", family, strings.Join(append(Names(table), extra...), ", "))}
		}
		if string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		o := table[i]
		field := v.FieldByIndex(o.index)
		if err := json.Unmarshal(raw, field.Addr().Interface()); err != nil {
			want := map[string]string{"size": "a byte count (an integer)", "int": "an integer", "uint": "an integer >= 0", "float": "a number",
				"bool": "true or false", "string": "a string", "map": "an object of strings"}[o.Kind]
			return nil, &OptionError{Option: k, Value: string(raw), Want: want}
		}
		if o.Choices != nil && !slices.Contains(o.Choices, field.String()) {
			return nil, &OptionError{Option: k, Value: field.String(), Want: choiceList(o.Choices)}
		}
	}
	return rest, nil
}

// choiceList is choices as an error names them: "scan", "random" or "".
func choiceList(choices []string) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		q[i] = strconv.Quote(c)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// OptionTable lists the store options (TableOf Options). Fields tagged json:"-" (Hotness,
// Placement, Faults) are Go-only and not listed.
func OptionTable() []OptionInfo { return TableOf[Options]() }

// OptionNames are the names of OptionTable, in its order.
func OptionNames() []string { return Names(OptionTable()) }

// DecodeOptions reads store options from a JSON object keyed by option name (OptionTable); keys
// left out keep their zero value, null is left out. A key that is no option, or a value of the
// wrong JSON type, is an *OptionError naming it (Validate, run by Open, checks the values).
func DecodeOptions(data []byte) (Options, error) {
	var opt Options
	_, err := DecodeTable("store", data, &opt)
	return opt, err
}
