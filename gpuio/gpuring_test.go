package gpuio

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuDrive performs reads through r exactly as the gpu-uring kernel does (tfc_uring_read in
// cuda/tierfs_cuda.cu): SQEs written into the process's ring memory and published by a
// release store of the SQ tail, completions polled from the CQ tail and retired by a store of the
// CQ head, staging slots recycled; no io_uring_enter except to wake a sleeping SQ thread. It
// returns each read's CQE result and copies each read's bytes into out[i].
func cpuDrive(t *testing.T, r *gpuRing, staging []byte, slotBytes int, files []int32, offs []int64, lens []int, out [][]byte) []int32 {
	t.Helper()
	p := &r.p
	sqes := unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	cqes := unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.rings[p.cqOff.cqes])), p.cqEntries)
	sqMask, cqMask := *ringU32(r.rings, p.sqOff.ringMask), *ringU32(r.rings, p.cqOff.ringMask)
	slots := min(len(staging)/slotBytes, int(p.sqEntries))
	free := make([]int, 0, slots)
	for i := range slots {
		free = append(free, i)
	}
	res := make([]int32, len(offs))
	tail, head := atomic.LoadUint32(r.sqTail), atomic.LoadUint32(r.cqHead)
	next, done := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for done < len(offs) {
		for next < len(offs) && len(free) > 0 && tail-atomic.LoadUint32(r.sqHead) < p.sqEntries {
			slot := free[len(free)-1]
			free = free[:len(free)-1]
			sqes[tail&sqMask] = uringSQE{opcode: ioringOpReadFixed, flags: iosqeFixedFile, fd: files[next], off: uint64(offs[next]),
				addr: uint64(uintptr(unsafe.Pointer(&staging[slot*slotBytes]))), len: uint32(lens[next]), userData: uint64(slot)<<40 | uint64(next)}
			tail++
			next++
		}
		atomic.StoreUint32(r.sqTail, tail)
		if err := r.wakeIfSleeping(); err != nil {
			t.Fatal(err)
		}
		for atomic.LoadUint32(r.cqTail) == head {
			if time.Now().After(deadline) {
				t.Fatalf("no completion within 10 s (%d of %d reads done; SQ head %d tail %d, flags %#x)",
					done, len(offs), atomic.LoadUint32(r.sqHead), tail, atomic.LoadUint32(r.sqFlags))
			}
			time.Sleep(10 * time.Microsecond)
		}
		for ct := atomic.LoadUint32(r.cqTail); head != ct; head++ {
			c := cqes[head&cqMask]
			i, slot := int(c.userData&(1<<40-1)), int(c.userData>>40)
			res[i] = c.res
			if c.res > 0 {
				copy(out[i], staging[slot*slotBytes:slot*slotBytes+int(c.res)])
			}
			free = append(free, slot)
			done++
		}
		atomic.StoreUint32(r.cqHead, head)
	}
	return res
}

// TestGPURingProtocolOnCPU sets a gpu-uring ring up (NO_MMAP + SQPOLL, registered files and
// staging) and drives it from the CPU with the GPU kernel's protocol: every read's bytes equal the
// file's, a read past the end reports 0 bytes, and a second ring shares the SQ thread.
func TestGPURingProtocolOnCPU(t *testing.T) {
	if err := ProbeGPURing(); err != nil {
		t.Skipf("gpu-uring ring unavailable here: %v", err)
	}
	seed := rand.Uint64()
	fds, want := testFiles(t, seed, 1<<20, 300<<10)
	r, err := newGPURing(8)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	attached, err := newGPURing(16) // attaches to r's SQ thread
	if err != nil {
		t.Fatal(err)
	}
	defer attached.close()
	if attached.p.flags&ioringSetupAttachWQ == 0 {
		t.Errorf("the second ring started an SQ thread of its own (flags %#x)", attached.p.flags)
	}
	const slotBytes = 8192
	staging, err := unix.Mmap(-1, 0, 6*slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(staging)
	for _, ring := range []*gpuRing{r, attached} {
		if err := ring.registerStaging(&staging[0], len(staging)); err != nil {
			t.Fatal(err)
		}
		if err := ring.registerFiles(fds); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for round, ring := range []*gpuRing{r, attached, r} {
		if round == 2 {
			time.Sleep(3 * sqpollIdleMs * time.Millisecond) // let the SQ thread fall asleep: the next reads must wake it
		}
		n := 50 + rng.IntN(100)
		files, offs, lens, out := make([]int32, n), make([]int64, n), make([]int, n), make([][]byte, n)
		for i := range n {
			f := rng.IntN(len(fds))
			blocks := len(want[f]) / 4096
			files[i], offs[i] = int32(f), int64(rng.IntN(blocks))*4096
			lens[i] = 4096 * (1 + rng.IntN(min(2, blocks-int(offs[i]/4096))))
			out[i] = make([]byte, lens[i])
		}
		res := cpuDrive(t, ring, staging, slotBytes, files, offs, lens, out)
		for i := range n {
			if int(res[i]) != lens[i] {
				t.Fatalf("round %d read %d (file %d, offset %d, %d bytes): result %d", round, i, files[i], offs[i], lens[i], res[i])
			}
			if !bytes.Equal(out[i], want[files[i]][offs[i]:offs[i]+int64(lens[i])]) {
				t.Fatalf("round %d read %d (file %d, offset %d): bytes differ from the file's (seed %d)", round, i, files[i], offs[i], seed)
			}
		}
	}
	if r.wakeups == 0 {
		t.Errorf("the SQ thread was never woken after sleeping %d ms", 3*sqpollIdleMs)
	}
	// Past the end of file 1: the CQE says 0 bytes (the kernel then reports a short read).
	end := int64(len(want[1]))
	res := cpuDrive(t, r, staging, slotBytes, []int32{1}, []int64{end}, []int{4096}, [][]byte{make([]byte, 4096)})
	if res[0] != 0 {
		t.Errorf("read at the end of a %d-byte file: result %d, want 0", end, res[0])
	}
	// A file index that was never registered: -EBADF, not a hang.
	res = cpuDrive(t, r, staging, slotBytes, []int32{7}, []int64{0}, []int{4096}, [][]byte{make([]byte, 4096)})
	if res[0] != -int32(unix.EBADF) {
		t.Errorf("read of unregistered file index 7: result %d, want %d (EBADF)", res[0], -int32(unix.EBADF))
	}
}

// TestGPURingFallsBack: a Stack asked for gpu-uring serves every request through the CPU path,
// bit for bit, and says why, where it has no device or the ring cannot be set up.
func TestGPURingFallsBack(t *testing.T) {
	seed := rand.Uint64()
	fds, want := testFiles(t, seed, 64<<10)
	s, err := Open(fds, Options{Backend: BackendGPUURing})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if on, why := s.GPURing(); on || !strings.Contains(why, "no device attached") {
		t.Errorf("GPURing() = %v, %q; want false and a reason naming the missing device", on, why)
	}
	if b := s.Backend(); b != BackendIOUring && b != BackendPread {
		t.Errorf("Backend() = %q, want the CPU engine in use", b)
	}
	dst := make([]byte, 1000)
	if err := s.Submit([]Request{{File: 0, Offset: 5000, Length: 1000, Dst: dst}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, want[0][5000:6000]) {
		t.Fatalf("bytes differ (seed %d)", seed)
	}
	if st := s.Stats(); !strings.Contains(st.GPURing, "no device attached") {
		t.Errorf("Stats().GPURing = %q", st.GPURing)
	}
	// The ring itself refused: ProbeGPURing says why (the reason a device Stack would report).
	errGPURingTest = errors.New("injected: NO_MMAP unsupported")
	defer func() { errGPURingTest = nil }()
	if err := ProbeGPURing(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("ProbeGPURing() = %v, want the injected refusal", err)
	}
}
