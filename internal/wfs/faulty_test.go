package wfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultyFailsTheNthCall: Faulty fails exactly the Nth call its fault applies to, with the
// fault's error, a short write writing half its bytes first, and passes every other call through.
func TestFaultyFailsTheNthCall(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	// The calls of WriteSynced and a rename: open, write, fsync, close, rename.
	for _, tc := range []struct {
		fault   Fault
		n       int
		hit     string
		errno   error
		content string // what p holds after the write ("" with the open failed)
		renamed bool
	}{
		{ENOSPC, 1, "open", unix.ENOSPC, "", false},
		{EIO, 2, "write", unix.EIO, "", false},
		{ENOSPC, 3, "fsync", unix.ENOSPC, "abcd", false},
		{EIO, 4, "close", unix.EIO, "abcd", false},
		{EIO, 5, "rename", unix.EIO, "abcd", false},
		{ShortWrite, 1, "write", unix.ENOSPC, "ab", false},
		{SyncFail, 1, "fsync", unix.EIO, "abcd", false},
		{SyncFail, 2, "", nil, "abcd", true},
		{ShortWrite, 2, "", nil, "abcd", true},
	} {
		os.Remove(p)
		os.Remove(p + ".new")
		f := &Faulty{Fault: tc.fault, N: tc.n}
		err := WriteSynced(f, p, []byte("abcd"))
		if err == nil {
			err = f.Rename(p, p+".new")
		}
		hitOp, _, _ := strings.Cut(f.Hit(), " ")
		if hitOp != tc.hit || (tc.errno == nil) != (err == nil) || tc.errno != nil && !errors.Is(err, tc.errno) {
			t.Fatalf("%v: hit %q, error %v; want hit %q, %v", f, f.Hit(), err, tc.hit, tc.errno)
		}
		got := p
		if tc.renamed {
			got = p + ".new"
		}
		if data, _ := os.ReadFile(got); string(data) != tc.content {
			t.Fatalf("%v: %s holds %q, want %q", f, got, data, tc.content)
		}
	}
}

// TestFaultyThenFailsALaterRemoval: with Then, the Then-th removal after the first failure
// fails too (EIO), once; removals before the first failure do not count.
func TestFaultyThenFailsALaterRemoval(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(p(name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &Faulty{Fault: EIO, N: 2, Then: 2}
	if err := f.Remove(p("a")); err != nil { // call 1: before the first failure
		t.Fatal(err)
	}
	if err := f.Mkdir(p("x"), 0o755); !errors.Is(err, unix.EIO) { // call 2: the first failure
		t.Fatalf("the first fault: %v", err)
	}
	if err := f.Remove(p("b")); err != nil { // the first removal after it
		t.Fatal(err)
	}
	if err := f.Remove(p("c")); !errors.Is(err, unix.EIO) || f.ThenHit() != "remove "+p("c") {
		t.Fatalf("the second removal after the failure: %v (then hit %q); want EIO", err, f.ThenHit())
	}
	if err := f.RemoveAll(p("d")); err != nil {
		t.Fatalf("a removal after the second fault: %v", err)
	}
	if _, err := os.Stat(p("c")); err != nil {
		t.Fatalf("the removal that failed removed the file: %v", err)
	}
	if got := f.String(); got != "eio at call 2, then removal 2" {
		t.Fatalf("String = %q", got)
	}
}

// TestWalk: Walk runs every fault at N = 1, 2, ... until one hits nothing, and after each EIO
// the second fault at Then = 1, 2, ... until it hits nothing or reaches maxThen.
func TestWalk(t *testing.T) {
	for _, maxThen := range []int{0, 1} {
		var runs []string
		walked, seconds := Walk(maxThen, func(fault Fault, n, then int) (bool, bool) {
			runs = append(runs, fmt.Sprintf("%s %d %d", fault, n, then))
			return n <= 2, then <= 2
		})
		wantSeconds := 2 * 2 // two EIO runs hit, each followed by two second faults that hit
		if maxThen == 1 {
			wantSeconds = 2
		}
		if walked != 2*len(Faults) || seconds != wantSeconds || !slices.Contains(runs, "eio 1 1") || slices.Contains(runs, "enospc 1 1") {
			t.Fatalf("maxThen %d: walked %d, seconds %d, runs %v", maxThen, walked, seconds, runs)
		}
	}
}
