package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckKeys(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "": accepted
	}{
		{`{"a": 1, "b": 2}`, ""},
		{`{"unverified_reads": false, "unverified_reads": true}`, `key "unverified_reads" appears twice in the object at $`},
		{`{"a": {"x": 1, "y": {"z": 1, "z": 2}}}`, `key "z" appears twice in the object at $.a.y`},
		{`{"features": [{"name": "x"}, {"name": "y", "name": "z"}]}`, `key "name" appears twice in the object at $.features[1]`},
		{`[{"a": 1}, {"a": 1}]`, ""},         // the same key in two objects
		{`{"a": [1, 2], "b": {"a": 3}}`, ""}, // the same key at two depths
		{`{"a": 1, "b"`, ""},                 // not JSON: left to the decoder
		{`"text"`, ""}, {`3`, ""}, {`null`, ""}, {``, ""},
		{`{"a\u0062": 1, "ab": 2}`, `key "ab" appears twice`}, // escapes decoded before comparing
	} {
		err := CheckKeys([]byte(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("CheckKeys(%s) = %v, want nil", c.in, err)
			}
			continue
		}
		if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckKeys(%s) = %v, want ErrDuplicateKey and %q", c.in, err, c.want)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	var v struct{ A int }
	if err := Unmarshal([]byte(`{"A": 1, "A": 2}`), &v); !errors.Is(err, ErrDuplicateKey) || v.A != 0 {
		t.Errorf("Unmarshal of a duplicate key: %v (A = %d); want ErrDuplicateKey and nothing decoded", err, v.A)
	}
	if err := Unmarshal([]byte(`{"A": 2}`), &v); err != nil || v.A != 2 {
		t.Errorf("Unmarshal: %v, A = %d", err, v.A)
	}
	var syn *json.SyntaxError
	if err := Unmarshal([]byte(`{"A": `), &v); !errors.As(err, &syn) {
		t.Errorf("Unmarshal of bad JSON: %v; want encoding/json's SyntaxError", err)
	}
}

func TestDecode(t *testing.T) {
	type T struct {
		A int `json:"a"`
	}
	for in, want := range map[string]string{
		`{"a": 1}`:          "",
		`{"a": 1, "a": 2}`:  `key "a" appears twice`,
		`{"a": 1, "b": 2}`:  `unknown field "b"`,
		`{"a": 1} {"a": 2}`: "more than one JSON value",
		`{"a": 1} trailing`: "more than one JSON value",
		`{"a": "one"}`:      "cannot unmarshal",
	} {
		var v T
		err := Decode([]byte(in), &v)
		if want == "" && (err != nil || v.A != 1) || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Decode(%s) = %v (a = %d), want %q", in, err, v.A, want)
		}
	}
}
