package ssd

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tierfs/tierfs/gpuio"
)

// Device-affine stacks. A feature striped over several devices (ingest's DevicePaths) is read by
// IO stacks of each device: every device (st_dev of a file) has a pool of stacks whose rings
// submit only to its files, and a Read of files on several devices serves each device's part on
// a stack of that device, the parts at once. Where every ring submits to every device, each
// device's queue and each file's kernel structures are taken by as many CPUs as there are
// stacks; liburing's iobench, one ring a device, read four memory-backed loop devices 1.2× faster
// than one pool of 16 stacks did (benchmarks/h200-2026-12-02/s22/devices).
//
// The stacks of a device open every file of the set, the other devices' as holes (fd -1, never
// read): a request's File, a fault rule's File and a short read's File then mean the same file
// in every pool, and a pool's errors are those one pool over every file gives.
//
// The budget of reads in flight (Options.QueueDepth) stays one for all pools: QueueDepth keeps
// meaning the reads in flight of the set together, so a device-affine set and a shared one
// (Options.SharedStacks) keep the same number in flight, and a read of one device alone may
// have all of it.

// stackPool is the IO stacks that read the files of one device.
type stackPool struct {
	files  []int // indexes in the set of the device's files, ascending
	stacks chan *pooledStack
}

// fileDevice is the device (st_dev) a file lies on; tests replace it to place files on devices.
var fileDevice = func(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Dev, nil
}

// deviceGroups groups the files fds by the device they lie on, in order of each device's first
// file; one group of every file where a device cannot be told (fstat failed).
func deviceGroups(fds []int) [][]int {
	var groups [][]int
	index := map[uint64]int{}
	for i, fd := range fds {
		dev, err := fileDevice(fd)
		if err != nil {
			return [][]int{allFiles(len(fds))}
		}
		g, ok := index[dev]
		if !ok {
			g = len(groups)
			index[dev] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	if len(groups) == 0 { // no files: one empty pool still answers Read with its errors
		groups = [][]int{nil}
	}
	return groups
}

func allFiles(n int) []int {
	files := make([]int, n)
	for i := range files {
		files[i] = i
	}
	return files
}

// openPools opens the IO stacks with opt: stacks in all over one pool of every file, or, with
// byDevice and files on several devices, stacksPerDevice for each device's pool.
func (f *Files) openPools(stacks int, byDevice bool, opt gpuio.Options) error {
	groups := [][]int{allFiles(len(f.fds))}
	if byDevice {
		groups = deviceGroups(f.fds)
	}
	f.poolOf = make([]int, len(f.fds))
	each := stacks
	if len(groups) > 1 {
		each = stacksPerDevice(stacks, len(groups))
	}
	for g, files := range groups {
		pool := &stackPool{files: files, stacks: make(chan *pooledStack, each)}
		f.pools = append(f.pools, pool)
		fds := f.fds
		if len(groups) > 1 {
			fds = make([]int, len(f.fds))
			for i := range fds {
				fds[i] = -1
			}
			for _, i := range files {
				fds[i] = f.fds[i]
				f.poolOf[i] = g
			}
		}
		for range each {
			st, err := gpuio.Open(fds, opt)
			if err != nil {
				return fmt.Errorf("ssd: %w", err)
			}
			f.backend = st.Backend()
			p := &pooledStack{st: st, pool: pool, stats: st.Stats()}
			f.all = append(f.all, p)
			pool.stacks <- p
		}
	}
	return nil
}

// stacksPerDevice is the IO stacks of each of devices pools given stacks in all: stacks divided
// over the devices, rounded up, and at least two where stacks allows two readers at once. A
// stack drains its device's queue at the end of each part it reads; a second one overlaps that
// tail with its own part. Measured on the dev VM (2 CPUs; tmpfs and the virtio disk, QD 512,
// 4 and 16 gathers, five interleaved rounds): one stack a device read 0.92 and 1.00 of the
// shared stacks' reads/s (medians), two a device 1.07 and 0.97, both at 0.8–0.9 of the CPU a
// read.
func stacksPerDevice(stacks, devices int) int {
	return max((stacks+devices-1)/devices, min(stacks, 2))
}

// Devices is the number of devices whose files have IO stacks of their own: 1 where every file
// lies on one device or every stack reads every file (Options.SharedStacks).
func (f *Files) Devices() int { return len(f.pools) }

// splitScratch is one split Read's requests, grouped by pool, and its parts' errors.
type splitScratch struct {
	reqs  []gpuio.Request
	ends  []int // reqs[ends[g-1]:ends[g]] are pool g's
	errs  []error
	count []int
}

var splitScratches = sync.Pool{New: func() any { return new(splitScratch) }}

// readSplit serves reqs, of files on several devices, as read does: each device's requests on a
// stack of its pool, the first device's on the calling goroutine and the others' on goroutines
// of their own, all done before it returns. The errors of the parts are joined, in device order,
// each classified (classify). A bad request fails the whole batch before any part is submitted.
func (f *Files) readSplit(reqs []gpuio.Request, gap int, stream uintptr) error {
	if err := f.all[0].st.Check(reqs); err != nil {
		return err
	}
	sc := splitScratches.Get().(*splitScratch)
	defer func() {
		clear(sc.reqs) // keep no caller's memory alive
		clear(sc.errs)
		splitScratches.Put(sc)
	}()
	n := len(f.pools)
	sc.count = append(sc.count[:0], make([]int, n)...)
	for _, r := range reqs {
		sc.count[f.poolOf[r.File]]++
	}
	only := -1
	for g, c := range sc.count {
		if c == len(reqs) {
			only = g
		}
	}
	if only >= 0 { // one device's files: no split
		return f.readOn(f.pools[only], reqs, gap, stream)
	}
	sc.ends = append(sc.ends[:0], make([]int, n)...)
	at := 0
	for g, c := range sc.count {
		sc.count[g] = at // next free place of pool g
		at += c
		sc.ends[g] = at
	}
	sc.reqs = append(sc.reqs[:0], make([]gpuio.Request, len(reqs))...)
	for _, r := range reqs {
		g := f.poolOf[r.File]
		sc.reqs[sc.count[g]] = r
		sc.count[g]++
	}
	sc.errs = append(sc.errs[:0], make([]error, n)...)
	var wg sync.WaitGroup
	first := -1
	for g := range n {
		lo := 0
		if g > 0 {
			lo = sc.ends[g-1]
		}
		part := sc.reqs[lo:sc.ends[g]]
		switch {
		case len(part) == 0:
		case first < 0:
			first = g
		default:
			wg.Go(func() { sc.errs[g] = f.readOn(f.pools[g], part, gap, stream) })
		}
	}
	lo := 0
	if first > 0 {
		lo = sc.ends[first-1]
	}
	sc.errs[first] = f.readOn(f.pools[first], sc.reqs[lo:sc.ends[first]], gap, stream)
	wg.Wait()
	var failed []error
	for _, err := range sc.errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 1 {
		return failed[0]
	}
	return errors.Join(failed...)
}
