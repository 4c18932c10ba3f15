package gpuio

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ABI, from include/uapi/linux/io_uring.h.
const (
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427

	ioringOffSQRing = 0
	ioringOffCQRing = 0x8000000
	ioringOffSQEs   = 0x10000000

	ioringSetupSQPoll     = 1 << 1
	ioringSetupClamp      = 1 << 4
	ioringSQNeedWakeup    = 1 << 0 // in the SQ ring's flags: the SQPOLL thread sleeps
	ioringEnterSQWakeup   = 1 << 1
	ioringFeatSingleMmap  = 1 << 0
	ioringEnterGetEvents  = 1 << 0
	ioringRegisterBuffers = 0
	ioringRegisterFiles   = 2
	ioringOpReadFixed     = 4
	ioringOpWriteFixed    = 5
	iosqeFixedFile        = 1 << 0
	rwfNowait             = 0x8 // RWF_NOWAIT: fail with EAGAIN instead of waiting for the device
)

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// Compile-time layout checks: the kernel ABI fixes these sizes.
var (
	_ [64 - unsafe.Sizeof(uringSQE{})]struct{}
	_ [unsafe.Sizeof(uringSQE{}) - 64]struct{}
	_ [16 - unsafe.Sizeof(uringCQE{})]struct{}
	_ [unsafe.Sizeof(uringCQE{}) - 16]struct{}
	_ [120 - unsafe.Sizeof(uringParams{})]struct{}
	_ [unsafe.Sizeof(uringParams{}) - 120]struct{}
)

// uring is one io_uring instance without SQPOLL, driven by a single goroutine. The SQ array is
// filled with the identity mapping once, so SQE i is always at array slot i.
type uring struct {
	fd                     int
	sqRing, cqRing, sqeMem []byte // mmap'ed; cqRing aliases sqRing with IORING_FEAT_SINGLE_MMAP
	sqHead, sqTail         *uint32
	cqHead, cqTail         *uint32
	sqMask, cqMask         uint32
	sqEntries              uint32
	sqes                   []uringSQE
	cqes                   []uringCQE
	localTail              uint32 // next SQE to fill; published to *sqTail by push
	fixedFiles             bool   // files registered: SQE fd is an index into them
	singleMmap             bool   // cqRing aliases sqRing
	enters                 uint64 // io_uring_enter calls
	sqFlags                *uint32
	sqpoll                 bool // a kernel thread consumes the SQ; enter only wakes it or waits
}

// sqpollIdleMs is how long an idle SQPOLL thread spins before it sleeps (and the next submission
// needs an io_uring_enter to wake it).
const sqpollIdleMs = 20

// errSQPollTest, when set by a test, is what io_uring_setup with SQPOLL fails with.
var errSQPollTest error

func ringU32(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }

// newURing sets up a ring with at least entries SQEs (clamped by the kernel) and maps it; with
// sqpoll, a kernel thread polls its SQ (IORING_SETUP_SQPOLL).
func newURing(entries uint32, sqpoll bool) (*uring, error) {
	var p uringParams
	p.flags = ioringSetupClamp
	if sqpoll {
		p.flags |= ioringSetupSQPoll
		p.sqThreadIdle = sqpollIdleMs
		if errSQPollTest != nil {
			return nil, fmt.Errorf("gpuio: io_uring_setup(%d entries, SQPOLL): %w", entries, errSQPollTest)
		}
	}
	fd, _, errno := unix.Syscall(sysIOUringSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		how := ""
		if sqpoll {
			how = ", SQPOLL"
		}
		return nil, fmt.Errorf("gpuio: io_uring_setup(%d entries%s): %w", entries, how, errno)
	}
	single := p.features&ioringFeatSingleMmap != 0
	r := &uring{fd: int(fd), sqEntries: p.sqEntries, singleMmap: single, sqpoll: sqpoll}
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	if single {
		sqSize = max(sqSize, cqSize)
	}
	mapRing := func(off int64, size int) ([]byte, error) {
		return unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	}
	var err error
	if r.sqRing, err = mapRing(ioringOffSQRing, sqSize); err != nil {
		r.close()
		return nil, fmt.Errorf("gpuio: mmap io_uring SQ ring: %w", err)
	}
	if single {
		r.cqRing = r.sqRing
	} else {
		if r.cqRing, err = mapRing(ioringOffCQRing, cqSize); err != nil {
			r.close()
			return nil, fmt.Errorf("gpuio: mmap io_uring CQ ring: %w", err)
		}
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(uringSQE{}))
	if r.sqeMem, err = mapRing(ioringOffSQEs, sqeSize); err != nil {
		r.close()
		return nil, fmt.Errorf("gpuio: mmap io_uring SQEs: %w", err)
	}
	r.sqHead, r.sqTail = ringU32(r.sqRing, p.sqOff.head), ringU32(r.sqRing, p.sqOff.tail)
	r.sqMask = *ringU32(r.sqRing, p.sqOff.ringMask)
	r.sqFlags = ringU32(r.sqRing, p.sqOff.flags)
	r.cqHead, r.cqTail = ringU32(r.cqRing, p.cqOff.head), ringU32(r.cqRing, p.cqOff.tail)
	r.cqMask = *ringU32(r.cqRing, p.cqOff.ringMask)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.cqRing[p.cqOff.cqes])), p.cqEntries)
	array := unsafe.Slice(ringU32(r.sqRing, p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.localTail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *uring) register(opcode uintptr, arg unsafe.Pointer, n int) error {
	return uringCall(sysIOUringRegister, r.fd, opcode, uintptr(arg), uintptr(n))
}

// uringCall makes io_uring system call trap on ring fd with three more arguments, retrying EINTR;
// it returns nil or the errno.
func uringCall(trap uintptr, fd int, a1, a2, a3 uintptr) error {
	for {
		_, _, errno := unix.Syscall6(trap, uintptr(fd), a1, a2, a3, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		default:
			return errno
		}
	}
}

// registerBuffers registers staging memory; the kernel only reads the iovec array.
func (r *uring) registerBuffers(iovs []unix.Iovec) error {
	if err := r.register(ioringRegisterBuffers, unsafe.Pointer(&iovs[0]), len(iovs)); err != nil {
		return fmt.Errorf("gpuio: io_uring_register(BUFFERS, %d iovecs): %w", len(iovs), err)
	}
	return nil
}

// registerFiles registers fds; afterwards SQEs name files by index.
func (r *uring) registerFiles(fds []int32) error {
	if len(fds) == 0 {
		return nil
	}
	if err := r.register(ioringRegisterFiles, unsafe.Pointer(&fds[0]), len(fds)); err != nil {
		return fmt.Errorf("gpuio: io_uring_register(FILES, %d fds): %w", len(fds), err)
	}
	r.fixedFiles = true
	return nil
}

// pushReadFixed queues one READ_FIXED SQE; the caller keeps in-flight reads <= sqEntries, so the
// SQ never overflows. addr must lie in registered buffer bufIndex.
func (r *uring) pushReadFixed(file int32, off int64, addr unsafe.Pointer, n int, bufIndex int, userData uint64, nowait bool) {
	r.pushFixed(ioringOpReadFixed, file, off, addr, n, bufIndex, userData, nowait)
}

// pushWriteFixed queues one WRITE_FIXED SQE (the kernel reads n bytes at addr, in registered
// buffer bufIndex), as pushReadFixed does, without RWF_NOWAIT.
func (r *uring) pushWriteFixed(file int32, off int64, addr unsafe.Pointer, n int, bufIndex int, userData uint64) {
	r.pushFixed(ioringOpWriteFixed, file, off, addr, n, bufIndex, userData, false)
}

func (r *uring) pushFixed(opcode uint8, file int32, off int64, addr unsafe.Pointer, n int, bufIndex int, userData uint64, nowait bool) {
	sqe := &r.sqes[r.localTail&r.sqMask]
	*sqe = uringSQE{
		opcode: opcode, fd: file, off: uint64(off), addr: uint64(uintptr(addr)),
		len: uint32(n), bufIndex: uint16(bufIndex), userData: userData,
	}
	if r.fixedFiles {
		sqe.flags = iosqeFixedFile
	}
	if nowait {
		sqe.rwFlags = rwfNowait
	}
	r.localTail++
	atomic.StoreUint32(r.sqTail, r.localTail)
}

// submit hands every SQE the kernel has not consumed yet to it and, when wait is set, blocks until
// at least one completion is available. EINTR is retried.
func (r *uring) submit(wait bool) error {
	if r.sqpoll {
		return r.submitSQPoll(wait)
	}
	for {
		toSubmit := r.localTail - atomic.LoadUint32(r.sqHead)
		var flags, minComplete uintptr
		if wait {
			flags, minComplete = ioringEnterGetEvents, 1
		} else if toSubmit == 0 {
			return nil
		}
		r.enters++
		_, _, errno := unix.Syscall6(sysIOUringEnter, uintptr(r.fd), uintptr(toSubmit), minComplete, flags, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			if !wait && r.localTail == atomic.LoadUint32(r.sqHead) {
				return nil
			}
			continue
		default:
			return fmt.Errorf("gpuio: io_uring_enter(submit %d): %w", toSubmit, errno)
		}
	}
}

// submitSQPoll wakes the SQ thread where it sleeps and, with wait, waits for a completion: the
// thread itself takes the SQEs, so a busy ring needs no system call to submit.
func (r *uring) submitSQPoll(wait bool) error {
	var flags uintptr
	if r.localTail != atomic.LoadUint32(r.sqHead) && atomic.LoadUint32(r.sqFlags)&ioringSQNeedWakeup != 0 {
		flags |= ioringEnterSQWakeup
	}
	var minComplete uintptr
	if wait {
		flags, minComplete = flags|ioringEnterGetEvents, 1
	}
	if flags == 0 {
		return nil
	}
	r.enters++
	if err := uringCall(sysIOUringEnter, r.fd, 0, minComplete, flags); err != nil {
		return fmt.Errorf("gpuio: io_uring_enter(SQPOLL, flags %#x): %w", flags, err)
	}
	return nil
}

// cqReady reports whether a completion is waiting in the CQ.
func (r *uring) cqReady() bool { return atomic.LoadUint32(r.cqHead) != atomic.LoadUint32(r.cqTail) }

// wait blocks until a completion is available, submitting nothing.
func (r *uring) wait() error {
	r.enters++
	if err := uringCall(sysIOUringEnter, r.fd, 0, 1, ioringEnterGetEvents); err != nil {
		return fmt.Errorf("gpuio: io_uring_enter(wait): %w", err)
	}
	return nil
}

// reap calls fn for every completion available now and returns how many it saw.
func (r *uring) reap(fn func(userData uint64, res int32)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		cqe := r.cqes[head&r.cqMask]
		fn(cqe.userData, cqe.res)
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// close unmaps the rings and closes the ring fd; the kernel cancels anything still in flight.
func (r *uring) close() error {
	if r.sqeMem != nil {
		_ = unix.Munmap(r.sqeMem)
	}
	if r.cqRing != nil && !r.singleMmap {
		_ = unix.Munmap(r.cqRing)
	}
	if r.sqRing != nil {
		_ = unix.Munmap(r.sqRing)
	}
	r.sqRing, r.cqRing, r.sqeMem, r.sqes, r.cqes = nil, nil, nil, nil, nil
	return unix.Close(r.fd)
}

// Probe reports whether io_uring with registered buffers works here: nil, or the error that made
// BackendAuto fall back to pread (for example EPERM under seccomp, ENOSYS, or ENOMEM on register).
func Probe() error {
	r, err := newURing(1, false)
	if err != nil {
		return err
	}
	defer r.close()
	page := unix.Getpagesize()
	buf, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("gpuio: mmap probe buffer: %w", err)
	}
	defer unix.Munmap(buf)
	iov := []unix.Iovec{{Base: &buf[0]}}
	iov[0].SetLen(page)
	return r.registerBuffers(iov)
}
