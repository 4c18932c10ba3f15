package featurestore

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		opt    Options
		option string // "" when valid
		value  string // in the message
	}{
		{Options{}, "", ""},
		{Options{HostCacheBytes: 1 << 20, HostPolicy: HostSieve, IOBackend: "pread", GPUTopology: GPUTopologyPinned, TopologyMemoryBytes: -1}, "", ""},
		{Options{HostCacheBytes: -1}, "host_cache", "-1"},
		{Options{GPUCacheBytes: -5}, "gpu_cache", "-5"},
		{Options{GPUDevice: -2}, "gpu_device", "-2"},
		{Options{QueueDepth: -1}, "queue_depth", "-1"},
		{Options{CoalesceGap: -2}, "coalesce_gap", "-2"},
		{Options{CoalesceGap: 1 << 20}, "coalesce_gap", "1048576"},
		{Options{ReadAlign: 1000}, "read_align", "1000"},
		{Options{ReadAlign: 256}, "read_align", "256"},
		{Options{ReadAlign: 512}, "read_align", "512"}, // verified reads are whole blocks
		{Options{ReadAlign: -1}, "read_align", "-1"},
		{Options{IOBackend: "gpu-uring"}, "io_backend", `"gpu-uring"`}, // its reads are not checked
		{Options{ReadAlign: 512, UnverifiedReads: true}, "", ""},
		{Options{ReadAlign: -1, IOBackend: "gpu-uring", UnverifiedReads: true}, "", ""},
		{Options{MaxConcurrentIO: -3}, "max_concurrent_io", "-3"},
		{Options{CopyWorkers: -4}, "copy_workers", "-4"},
		{Options{IOBackend: "carrier-pigeon"}, "io_backend", `"carrier-pigeon"`},
		{Options{HostPolicy: "lru"}, "host_policy", `"lru"`},
		{Options{GPUTopology: "nvme"}, "gpu_topology", `"nvme"`},
	} {
		err := c.opt.Validate()
		if c.option == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opt, err)
			}
			continue
		}
		var oe *OptionError
		if !errors.Is(err, ErrInvalidOption) || !errors.As(err, &oe) || oe.Option != c.option {
			t.Errorf("%v: got %v; want an *OptionError of %s wrapping ErrInvalidOption", c.opt, err, c.option)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.option+" = "+c.value) {
			t.Errorf("%v: message %q does not name %s = %s", c.opt, msg, c.option, c.value)
		}
		// Open refuses it before looking at the dataset.
		if _, err := Open(t.TempDir(), c.opt); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("Open with %v: got %v, want ErrInvalidOption", c.opt, err)
		}
	}
}

func TestOptionsEnsureDefaults(t *testing.T) {
	o := (&Options{QueueDepth: -1}).EnsureDefaults()
	if o.QueueDepth != -1 || o.MaxConcurrentIO <= 0 || o.CopyWorkers <= 0 || o.TopologyMemoryBytes != DefaultTopologyMemoryBytes {
		t.Errorf("EnsureDefaults gave %v: want defaults for zeros, bad values kept", o)
	}
	if (&Options{}).EnsureDefaults().QueueDepth != DefaultQueueDepth {
		t.Error("QueueDepth 0 did not become the default")
	}
	o = (&Options{TopologyMemoryBytes: -1, MaxConcurrentIO: 2}).EnsureDefaults()
	if o.TopologyMemoryBytes != -1 || o.MaxConcurrentIO != 2 {
		t.Errorf("EnsureDefaults changed values that were set: %v", o)
	}
}

// Every option the front ends pass has a JSON name; Hotness and Placement (Go values) have none.
func TestOptionsJSONNames(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "" {
			t.Errorf("Options.%s has no json tag", f.Name)
		}
		if name != "-" && name != strings.ToLower(name) {
			t.Errorf("Options.%s: json name %q is not snake_case", f.Name, name)
		}
	}
	var back Options
	in := Options{Feature: "x", HostCacheBytes: 5, IOBackend: "pread", GPUTopology: "device", UnverifiedReads: true, Hotness: []uint32{1}}
	if err := json.Unmarshal([]byte(in.String()), &back); err != nil {
		t.Fatal(err)
	}
	in.Hotness = nil
	if !reflect.DeepEqual(back, in) {
		t.Errorf("String round trip: got %v, want %v", back, in)
	}
}

// TestStagingBoundedByMemory: IO stacks whose staging the machine cannot hold are an option
// error naming the option and the numbers, before anything is mapped.
func TestStagingBoundedByMemory(t *testing.T) {
	rng := newRand(t)
	d := writeDataset(t, 100, 4, 1, 2, rng)
	_, err := Open(d.Dir, Options{MaxConcurrentIO: 100000, QueueDepth: 1024})
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "max_concurrent_io") || !strings.Contains(err.Error(), "100000") {
		t.Fatalf("100000 IO stacks of QD 1024: %v", err)
	}
	// A queue depth no single stack can stage is that option's fault, not the stacks'.
	if _, err := Open(d.Dir, Options{MaxConcurrentIO: 2, QueueDepth: math.MaxInt32}); !errors.Is(err, ErrInvalidOption) ||
		!strings.Contains(err.Error(), "option queue_depth = 2147483647") {
		t.Fatalf("queue depth 2^31-1: %v", err)
	}
	s, err := Open(d.Dir, Options{MaxConcurrentIO: 2, QueueDepth: 64})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
