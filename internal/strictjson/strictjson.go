// Package strictjson decodes JSON that tierfs reads (options, manifests, specs, plan files) the
// way encoding/json does, but refuses an object that holds a key twice: encoding/json keeps the
// last, so {"unverified_reads": false, "unverified_reads": true} would read as true.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrDuplicateKey is wrapped by the error of an input that holds a key twice in one object.
var ErrDuplicateKey = errors.New("duplicate key")

// Unmarshal is json.Unmarshal after CheckKeys.
func Unmarshal(data []byte, v any) error {
	if err := CheckKeys(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// Decode decodes data, one JSON value, into v, refusing a key given twice (CheckKeys), a key v
// has no field for, and anything after the value.
func Decode(data []byte, v any) error {
	if err := CheckKeys(data); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("strictjson: more than one JSON value")
	}
	return nil
}

// CheckKeys returns an error wrapping ErrDuplicateKey, naming the key and where it stands
// ("$.features[1].name"), when an object of data holds a key twice; nil otherwise, and nil for
// input that is not valid JSON (the decoder that follows reports that).
func CheckKeys(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	err := checkValue(d, "$")
	if errors.Is(err, ErrDuplicateKey) {
		return err
	}
	return nil
}

// checkValue reads one value from d, checking the objects it holds; path names it.
func checkValue(d *json.Decoder, path string) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]bool{}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return err
			}
			key, ok := tok.(string)
			if !ok {
				return fmt.Errorf("strictjson: key %v at %s is not a string", tok, path)
			}
			if seen[key] {
				return fmt.Errorf("strictjson: key %q appears twice in the object at %s: %w", key, path, ErrDuplicateKey)
			}
			seen[key] = true
			if err := checkValue(d, path+"."+key); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; d.More(); i++ {
			if err := checkValue(d, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	_, err = d.Token() // the closing delimiter
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
