package gpuio

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// gpuRing is an io_uring whose rings live in memory this process provides
// (IORING_SETUP_NO_MMAP, Linux >= 6.5) and whose submission ring a kernel thread polls
// (IORING_SETUP_SQPOLL). With that memory mapped for a GPU, a CUDA kernel writes the SQEs and
// reaps the CQEs itself (the gpu-uring backend): no CPU thread submits or completes a read. The
// Go side only sets the ring up, registers the files and the staging, wakes the SQ thread when it
// has gone to sleep, and tears the ring down.
//
// Every gpuRing of the process shares one SQ thread (IORING_SETUP_ATTACH_WQ), so a pool of
// Stacks costs one polling CPU, not one per Stack.
type gpuRing struct {
	fd      int
	rings   []byte // SQ and CQ rings: heads, tails, flags, CQEs, the SQ array (mmap'ed anonymous)
	sqeMem  []byte // the SQEs
	p       uringParams
	sqFlags *uint32
	sqHead  *uint32
	sqTail  *uint32
	cqHead  *uint32
	cqTail  *uint32
	fixed   bool   // files registered
	wakeups uint64 // io_uring_enter calls that woke the SQ thread
}

// io_uring setup flags the gpu-uring backend needs (include/uapi/linux/io_uring.h).
const (
	ioringSetupAttachWQ = 1 << 5
	ioringSetupNoMmap   = 1 << 14
	ioringSetupNoSQArr  = 1 << 16
)

// sqThread is the process's shared SQ thread: the fd of a live gpuRing that other rings attach to.
var sqThread struct {
	sync.Mutex
	fd int // -1: none
}

func init() { sqThread.fd = -1 }

// errGPURingTest, when set by a test, is what gpu ring setup fails with (the fallback paths).
var errGPURingTest error

// newGPURing sets up a ring of entries SQEs (a power of two) in freshly mapped memory.
func newGPURing(entries uint32) (*gpuRing, error) {
	if errGPURingTest != nil {
		return nil, errGPURingTest
	}
	page := unix.Getpagesize()
	roundUp := func(n int) int { return (n + page - 1) / page * page }
	// The rings' size as the kernel computes it (struct io_rings, the CQEs, the SQ array), with a
	// page of room for the header: CQ entries are twice the SQ's.
	ringBytes := roundUp(page + int(2*entries)*int(unsafe.Sizeof(uringCQE{})) + int(entries)*4 + 64)
	sqeBytes := roundUp(int(entries) * int(unsafe.Sizeof(uringSQE{})))
	mmap := func(n int) ([]byte, error) {
		return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	}
	r := &gpuRing{fd: -1}
	var err error
	if r.rings, err = mmap(ringBytes); err != nil {
		return nil, fmt.Errorf("gpuio: gpu-uring: mmap %d bytes of rings: %w", ringBytes, err)
	}
	if r.sqeMem, err = mmap(sqeBytes); err != nil {
		r.unmap()
		return nil, fmt.Errorf("gpuio: gpu-uring: mmap %d bytes of SQEs: %w", sqeBytes, err)
	}
	r.p.flags = ioringSetupNoMmap | ioringSetupSQPoll
	r.p.sqThreadIdle = sqpollIdleMs
	r.p.sqOff.userAddr = uint64(uintptr(unsafe.Pointer(&r.sqeMem[0])))
	r.p.cqOff.userAddr = uint64(uintptr(unsafe.Pointer(&r.rings[0])))
	sqThread.Lock()
	defer sqThread.Unlock()
	if sqThread.fd >= 0 {
		r.p.flags |= ioringSetupAttachWQ
		r.p.wqFD = uint32(sqThread.fd)
	}
	fd, _, errno := unix.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&r.p)), 0)
	if errno != 0 && r.p.flags&ioringSetupAttachWQ != 0 {
		// The shared thread's ring may be closing: start a thread of this ring's own.
		r.p.flags &^= ioringSetupAttachWQ
		r.p.wqFD = 0
		fd, _, errno = unix.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&r.p)), 0)
	}
	if errno != 0 {
		r.unmap()
		return nil, fmt.Errorf("gpuio: gpu-uring: io_uring_setup(%d entries, NO_MMAP|SQPOLL) (needs Linux >= 6.5 and SQPOLL permitted): %w", entries, errno)
	}
	r.fd = int(fd)
	if int(r.p.sqOff.array)+int(r.p.sqEntries)*4 > len(r.rings) || int(r.p.cqOff.cqes)+int(r.p.cqEntries)*16 > len(r.rings) {
		r.close()
		return nil, fmt.Errorf("gpuio: gpu-uring: the kernel's rings (SQ array at %d, CQEs at %d) do not fit %d bytes", r.p.sqOff.array, r.p.cqOff.cqes, len(r.rings))
	}
	if sqThread.fd < 0 {
		sqThread.fd = r.fd
	}
	r.sqHead, r.sqTail = ringU32(r.rings, r.p.sqOff.head), ringU32(r.rings, r.p.sqOff.tail)
	r.sqFlags = ringU32(r.rings, r.p.sqOff.flags)
	r.cqHead, r.cqTail = ringU32(r.rings, r.p.cqOff.head), ringU32(r.rings, r.p.cqOff.tail)
	if r.p.flags&ioringSetupNoSQArr == 0 {
		array := unsafe.Slice(ringU32(r.rings, r.p.sqOff.array), r.p.sqEntries)
		for i := range array {
			array[i] = uint32(i)
		}
	}
	return r, nil
}

func (r *gpuRing) register(opcode uintptr, arg unsafe.Pointer, n int) error {
	return uringCall(sysIOUringRegister, r.fd, opcode, uintptr(arg), uintptr(n))
}

// registerStaging registers [base, base+n) as buffer 0 (READ_FIXED reads land there).
func (r *gpuRing) registerStaging(base *byte, n int) error {
	iov := []unix.Iovec{{Base: base}}
	iov[0].SetLen(n)
	if err := r.register(ioringRegisterBuffers, unsafe.Pointer(&iov[0]), 1); err != nil {
		return fmt.Errorf("gpuio: gpu-uring: io_uring_register(BUFFERS, %d bytes): %w", n, err)
	}
	return nil
}

// registerFiles registers fds; SQEs then name them by index.
func (r *gpuRing) registerFiles(fds []int) error {
	if len(fds) == 0 {
		return nil
	}
	f := make([]int32, len(fds))
	for i, fd := range fds {
		f[i] = int32(fd)
	}
	if err := r.register(ioringRegisterFiles, unsafe.Pointer(&f[0]), len(f)); err != nil {
		return fmt.Errorf("gpuio: gpu-uring: io_uring_register(FILES, %d fds): %w", len(f), err)
	}
	r.fixed = true
	return nil
}

// wakeIfSleeping wakes the SQ thread when it has gone to sleep with SQEs still unconsumed.
func (r *gpuRing) wakeIfSleeping() error {
	if atomic.LoadUint32(r.sqFlags)&ioringSQNeedWakeup == 0 || atomic.LoadUint32(r.sqTail) == atomic.LoadUint32(r.sqHead) {
		return nil
	}
	r.wakeups++
	if err := uringCall(sysIOUringEnter, r.fd, 0, 0, ioringEnterSQWakeup); err != nil {
		return fmt.Errorf("gpuio: gpu-uring: io_uring_enter(SQ_WAKEUP): %w", err)
	}
	return nil
}

// cqPending is the number of completions the kernel posted that nobody has reaped.
func (r *gpuRing) cqPending() uint32 {
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

func (r *gpuRing) unmap() {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
	}
	r.sqeMem, r.rings = nil, nil
}

// closeFD closes the ring: the kernel cancels what is in flight and stops touching the memory
// once the last reference goes (the SQ thread's, if it was mid-submission).
func (r *gpuRing) closeFD() error {
	if r.fd < 0 {
		return nil
	}
	sqThread.Lock()
	if sqThread.fd == r.fd {
		sqThread.fd = -1 // rings attached to it keep the thread; new rings start another
	}
	sqThread.Unlock()
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// close closes the ring and unmaps its memory (which CUDA must no longer have registered).
func (r *gpuRing) close() error {
	err := r.closeFD()
	r.unmap()
	return err
}

// ProbeGPURing reports whether this kernel and process can set up the gpu-uring backend's ring
// (NO_MMAP and SQPOLL): nil, or why not.
func ProbeGPURing() error {
	r, err := newGPURing(8)
	if err != nil {
		return err
	}
	return r.close()
}
