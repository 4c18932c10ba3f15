package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/tierfs/tierfs/dataset"
	"github.com/tierfs/tierfs/featurestore"
	"github.com/tierfs/tierfs/ingest"
)

// The answer of a JSON call (tfs_advise_json, tfs_place_json) that does not fit the caller's
// buffer is kept on the handle for the retry, reused only for the same request, dropped once
// delivered, and dropped by tfs_close with the handle: nothing is kept anywhere else.
func TestKeptAnswersGoWithTheHandle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if _, err := ingest.Synth(ingest.SynthOptions{Nodes: 200, AvgDegree: 3, Dim: 4, DType: dataset.Float32, Classes: 2, Seed: 1, Out: dir}); err != nil {
		t.Fatal(err)
	}
	s, err := featurestore.Open(dir, featurestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &storeRec{s: s}
	h := register(kindStore, rec)

	runs := 0
	run := func(dec *json.Decoder) (any, error) {
		var req map[string]int
		if err := dec.Decode(&req); err != nil {
			return nil, err
		}
		runs++
		return map[string]int{"run": runs, "x": req["x"]}, nil
	}
	want := `{"run":1,"x":5}`
	data, err := rec.kept.answer("advise", `{"x": 5}`, 4, run) // too small: kept
	if err != nil || string(data) != want || runs != 1 || rec.kept.count() != 1 {
		t.Fatalf("first call: %s, %v, %d runs, %d kept", data, err, runs, rec.kept.count())
	}
	if data, _ := rec.kept.answer("place", `{"x": 5}`, 4, run); string(data) != `{"run":2,"x":5}` || rec.kept.count() != 2 {
		t.Fatalf("another call's answer is its own: %s, %d kept", data, rec.kept.count())
	}
	data, err = rec.kept.answer("advise", `{"x": 5}`, uint64(len(want)+1), run) // the retry: the kept answer
	if err != nil || string(data) != want || runs != 2 {
		t.Fatalf("retry: %s, %v, %d runs; want the kept answer without running", data, err, runs)
	}
	if _, ok := rec.kept.byCall["advise"]; ok {
		t.Fatal("a delivered answer is still kept")
	}
	if data, _ := rec.kept.answer("place", `{"x": 6}`, 1000, run); string(data) != `{"run":3,"x":6}` {
		t.Fatalf("another request runs again: %s", data)
	}
	rec.kept.answer("advise", `{"x": 7}`, 0, run) // a size query: kept
	if rec.kept.count() != 1 {
		t.Fatalf("%d answers kept, want 1", rec.kept.count())
	}
	if err := closeStore(h); err != nil {
		t.Fatal(err)
	}
	if rec.kept.count() != 0 {
		t.Fatalf("tfs_close left %d kept answers", rec.kept.count())
	}
	if _, err := rec.kept.answer("advise", `{"x": 7}`, 0, run); err != nil || rec.kept.count() != 0 {
		t.Fatalf("an answer was kept after close: %v", rec.kept.byCall)
	}
}
