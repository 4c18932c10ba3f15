package featurestore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// OptionInfo describes one store option: a field of Options with a json name.
type OptionInfo struct {
	Name string `json:"name"` // the JSON name: Python's keyword, the CLI's flag with '-' for '_'
	// Kind is "size" (a byte count; front ends also take "4GiB"), "int", "bool" or "string".
	Kind  string `json:"kind"`
	Help  string `json:"help"` // one line for a user
	field int    // index in Options
}

// OptionTable lists the store options in the order of Options' fields, read from the type itself
// (json name, kind tag or Go kind, help tag), so that a new field is a new option everywhere.
// Fields tagged json:"-" (Hotness, Placement, Faults) are Go-only and not listed.
func OptionTable() []OptionInfo {
	typ := reflect.TypeFor[Options]()
	var out []OptionInfo
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" {
			continue
		}
		kind := f.Tag.Get("kind")
		if kind == "" {
			kind = map[reflect.Kind]string{reflect.Int: "int", reflect.Int64: "int", reflect.Bool: "bool", reflect.String: "string"}[f.Type.Kind()]
		}
		out = append(out, OptionInfo{Name: name, Kind: kind, Help: f.Tag.Get("help"), field: i})
	}
	return out
}

// OptionNames are the names of OptionTable, in its order.
func OptionNames() []string {
	var names []string
	for _, o := range OptionTable() {
		names = append(names, o.Name)
	}
	return names
}

// DecodeOptions reads store options from a JSON object keyed by option name (OptionTable); keys
// left out keep their zero value, null is left out. A key that is no option, or a value of the
// wrong JSON type, is an *OptionError naming it (Validate, run by Open, checks the values).
func DecodeOptions(data []byte) (Options, error) {
	var opt Options
	if len(bytes.TrimSpace(data)) == 0 {
		return opt, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return opt, &OptionError{Option: "options", Value: string(data), Want: fmt.Sprintf("a JSON object of store options (%v)", err)}
	}
	table := OptionTable()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key named is always the same one
	v := reflect.ValueOf(&opt).Elem()
	for _, k := range keys {
		i := slices.IndexFunc(table, func(o OptionInfo) bool { return o.Name == k })
		if i < 0 {
			return opt, &OptionError{Option: k, Value: string(fields[k]), Want: "one of the store options " + strings.Join(OptionNames(), ", ")}
		}
		raw := fields[k]
		if string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, v.Field(table[i].field).Addr().Interface()); err != nil {
			want := map[string]string{"size": "a byte count (an integer)", "int": "an integer", "bool": "true or false", "string": "a string"}[table[i].Kind]
			return opt, &OptionError{Option: k, Value: string(raw), Want: want}
		}
	}
	return opt, nil
}

// Index is the option's field index in Options, for reflect.Value.FieldByIndex.
func (o OptionInfo) Index() []int { return []int{o.field} }
