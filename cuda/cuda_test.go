package cuda

import (
	"errors"
	"testing"
)

// TestLoad loads the shim where there is one and a GPU; elsewhere it checks that the failure is
// a clean ErrUnavailable with a reason, which is what every caller falls back on.
func TestLoad(t *testing.T) {
	err := Load()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Load failed with %v, want an error wrapping ErrUnavailable", err)
		}
		t.Skipf("no GPU path here: %v", err)
	}
	d, err := Info(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %s: %+v", Path(), d)
}

// BenchmarkCallCosts: the host cost of the calls a device gather makes, each alone, on the
// legacy default stream and on a stream of its own (launches of tiny kernels).
func BenchmarkCallCosts(b *testing.B) {
	if err := Load(); err != nil {
		b.Skip(err)
	}
	st, _ := NewStream(0)
	defer DestroyStream(0, st)
	ev, _ := NewEvent(0)
	defer DestroyEvent(0, ev)
	buf, _ := Malloc(0, 1<<20)
	defer Free(0, buf)
	hostAddr, _, _ := HostAlloc(0, 4096)
	defer HostFree(0, hostAddr)
	Memset(0, buf, 0, 1<<20, 0)
	SyncStream(0, 0)
	for _, s := range []Stream{0, st} {
		name := "stream"
		if s == 0 {
			name = "legacy"
		}
		b.Run(name+"/record", func(b *testing.B) {
			for b.Loop() {
				Record(0, ev, s)
			}
			SyncStream(0, s)
		})
		b.Run(name+"/record+sync", func(b *testing.B) {
			for b.Loop() {
				Record(0, ev, s)
				SyncEvent(0, ev)
			}
		})
		b.Run(name+"/gather-launch", func(b *testing.B) {
			for b.Loop() {
				GatherRows(0, buf, 512, 0, 0, 1, buf+4096, 0, s)
			}
			SyncStream(0, s)
		})
		b.Run(name+"/split-launch", func(b *testing.B) {
			for b.Loop() {
				SplitGather(0, SplitArgs{IDs: buf, N: 1, NumNodes: 1, RowBytes: 512, Dst: buf + 8192, MissIDs: buf + 16384, MissPos: buf + 20480,
					Scratch: buf + 32768, HostCounts: hostAddr}, 0, s)
			}
			SyncStream(0, s)
		})
	}
}

// TestMirrorKeepsOutgrownBuffers: a Mirror that grows keeps its old buffers, still usable, until
// Free (freeing them would wait for the whole device, which a NCCL collective in flight can turn
// into a deadlock), and Free releases every one of them.
func TestMirrorKeepsOutgrownBuffers(t *testing.T) {
	if err := Load(); err != nil {
		t.Skip(err)
	}
	var m Mirror
	if err := m.Ensure(0, 4096, 4096); err != nil {
		t.Fatal(err)
	}
	old := m.Host
	old[0] = 7
	for _, size := range []int{8192, 8192, 1 << 16} {
		if err := m.Ensure(0, size, size); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.outgrown) != 2 || len(m.Host) != 1<<16 {
		t.Fatalf("after growing twice: %d outgrown buffers and %d bytes; want 2 kept and 65536", len(m.outgrown), len(m.Host))
	}
	if old[0] != 7 || m.outgrown[0].HostAddr == 0 || m.outgrown[0].Dev == 0 {
		t.Fatalf("the first buffer was released before Free: %+v", m.outgrown[0])
	}
	m.Free(0)
	if m.HostAddr != 0 || m.Dev != 0 || m.outgrown != nil {
		t.Fatalf("Free left %+v", m)
	}
}
