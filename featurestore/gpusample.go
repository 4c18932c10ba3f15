package featurestore

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tierfs/tierfs/cuda"
	"github.com/tierfs/tierfs/topology"
)

// gpuTopology is the topology copied for GPU sampling, into device memory or into pinned host
// memory that the sampling kernel reads over PCIe. It answers Degrees and NeighborsAt from the
// host graph and draws hops with the GPU kernel (topology.HopDrawer), which picks the same
// neighbors as the host sampler.
type gpuTopology struct {
	topology.Graph // the host copy
	dev            int
	pinned         bool
	indptr         uintptr
	indices        uintptr
	indexBytes     int
	blocks         int

	mu      sync.Mutex // one hop at a time: the scratch below is shared
	stream  cuda.Stream
	scratch cuda.Mirror // nodes, deg, off go up; out comes back
}

var _ topology.HopDrawer = (*gpuTopology)(nil)

// loadGPUTopology copies the in-memory topology to where Options.GPUTopology says. A stack
// whose node type the session's one edge type does not join to itself has no topology of its
// own: the session copies every edge type (Session.loadGPUTopologies).
func (s *Store) loadGPUTopology() error {
	if s.graph == nil && len(s.sess.edges) > 0 {
		return nil
	}
	csc, err := gpuTopologyCSC(s.opt, s.graph, s.m.Dir(), "")
	if err != nil {
		return err
	}
	g := s.gpu
	t, err := newGPUTopology(g.dev, g.info.SMs*8, csc, s.opt.GPUTopology == GPUTopologyPinned)
	if err != nil {
		return err
	}
	g.topo = t
	return nil
}

// gpuTopologyCSC is graph as the in-memory CSC GPU sampling copies, or the error that says why
// it cannot be: no topology, or a topology left on disk by TopologyMemoryBytes. what names the
// edge type ("" for a one-type dataset).
func gpuTopologyCSC(opt Options, graph topology.Graph, dir, what string) (*topology.CSC, error) {
	csc, ok := graph.(*topology.CSC)
	if ok {
		return csc, nil
	}
	if graph == nil {
		return nil, fmt.Errorf("featurestore: GPUTopology %q: dataset %s has no topology", opt.GPUTopology, dir)
	}
	if what != "" {
		what = " of edge type " + what
	}
	return nil, fmt.Errorf("featurestore: GPUTopology %q needs the topology%s in memory; it is %d edges, over TopologyMemoryBytes %d",
		opt.GPUTopology, what, graph.NumEdges(), opt.TopologyMemoryBytes)
}

// newGPUTopology copies csc into device memory, or into pinned host memory when pinned, for the
// sampling kernel on device dev with a grid of blocks. On error nothing stays allocated.
func newGPUTopology(dev, blocks int, csc *topology.CSC, pinned bool) (_ *gpuTopology, err error) {
	t := &gpuTopology{Graph: csc, dev: dev, pinned: pinned, blocks: blocks}
	if t.stream, err = cuda.NewStream(dev); err != nil {
		return nil, fmt.Errorf("featurestore: GPU topology: %w", err)
	}
	defer func() {
		if err != nil {
			t.free(dev)
		}
	}()
	indptr := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(csc.Indptr))), len(csc.Indptr)*8)
	var indices []byte
	if csc.Indices32 != nil {
		t.indexBytes = 4
		indices = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(csc.Indices32))), len(csc.Indices32)*4)
	} else {
		t.indexBytes = 8
		indices = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(csc.Indices64))), len(csc.Indices64)*8)
	}
	if t.indptr, err = t.upload(indptr); err != nil {
		return nil, fmt.Errorf("featurestore: GPU topology index pointers (%d bytes): %w", len(indptr), err)
	}
	if t.indices, err = t.upload(indices); err != nil {
		return nil, fmt.Errorf("featurestore: GPU topology indices (%d bytes): %w", len(indices), err)
	}
	return t, nil
}

// upload copies data (Go memory) into new pinned or device memory; device copies go through a
// pinned bounce buffer so the GPU never reads Go memory.
func (t *gpuTopology) upload(data []byte) (uintptr, error) {
	size := uint64(max(len(data), 8))
	if t.pinned {
		addr, buf, err := cuda.HostAlloc(t.dev, size)
		if err != nil {
			return 0, err
		}
		copy(buf, data)
		return addr, nil
	}
	dst, err := cuda.Malloc(t.dev, size)
	if err != nil {
		return 0, err
	}
	const chunk = 32 << 20
	bounceAddr, bounce, err := cuda.HostAlloc(t.dev, uint64(min(chunk, max(len(data), 8))))
	if err != nil {
		cuda.Free(t.dev, dst)
		return 0, err
	}
	defer cuda.HostFree(t.dev, bounceAddr)
	for lo := 0; lo < len(data); lo += chunk {
		n := copy(bounce, data[lo:])
		if err := cuda.Memcpy(t.dev, dst+uintptr(lo), bounceAddr, uint64(n), t.stream); err == nil {
			err = cuda.SyncStream(t.dev, t.stream)
		}
		if err != nil {
			cuda.Free(t.dev, dst)
			return 0, err
		}
	}
	return dst, nil
}

func (t *gpuTopology) free(dev int) {
	release := func(p uintptr) {
		if p == 0 {
			return
		}
		if t.pinned {
			cuda.HostFree(dev, p)
		} else {
			cuda.Free(dev, p)
		}
	}
	release(t.indptr)
	release(t.indices)
	t.scratch.Free(dev)
	if t.stream != 0 {
		cuda.DestroyStream(dev, t.stream)
	}
}

// DrawHop implements topology.HopDrawer with the sampling kernel: nodes, degrees and offsets go
// up, the kernel draws positions and reads the neighbors, the neighbors come back.
func (t *gpuTopology) DrawHop(nodes, deg, off []int64, fanout int, replace bool, seed uint64, hop int, pos, out []int64) error {
	n := len(nodes)
	total := len(out)
	if n == 0 || total == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Layout of the scratch (int64s): nodes[n] deg[n] off[n+1] pos[total] out[total].
	words := 3*n + 1 + 2*total
	need := words * 8
	if err := t.scratch.Ensure(t.dev, need, need+need/2); err != nil {
		return fmt.Errorf("featurestore: GPU sampling scratch: %w", err)
	}
	w := unsafe.Slice((*int64)(unsafe.Pointer(&t.scratch.Host[0])), words)
	copy(w[0:n], nodes)
	copy(w[n:2*n], deg)
	copy(w[2*n:3*n+1], off)
	at := func(word int) uintptr { return t.scratch.Dev + uintptr(word*8) }
	inBytes := uint64((3*n + 1) * 8)
	err := cuda.Memcpy(t.dev, t.scratch.Dev, t.scratch.HostAddr, inBytes, t.stream)
	if err == nil {
		err = cuda.SampleHop(t.dev, cuda.HopArgs{
			Indptr: t.indptr, Indices: t.indices, IndexBytes: t.indexBytes,
			Nodes: at(0), Deg: at(n), Off: at(2 * n), N: int64(n),
			Fanout: fanout, Replace: replace, Seed: seed, Hop: hop,
			Pos: at(3*n + 1), Out: at(3*n + 1 + total),
		}, t.blocks, t.stream)
	}
	outWord := 3*n + 1 + total
	back := outWord // the positions sit just before the neighbors: one copy brings both back
	if pos != nil {
		back = 3*n + 1
	}
	if err == nil {
		err = cuda.Memcpy(t.dev, t.scratch.HostAddr+uintptr(back*8), at(back), uint64((outWord+total-back)*8), t.stream)
	}
	if serr := cuda.SyncStream(t.dev, t.stream); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("featurestore: GPU sampling hop %d: %w", hop, err)
	}
	copy(out, w[outWord:outWord+total])
	if pos != nil {
		copy(pos, w[3*n+1:outWord])
	}
	return nil
}

// ListStarts implements topology.EdgeIndexer from the host copy.
func (t *gpuTopology) ListStarts(nodes []int64, start []int64) error {
	return t.Graph.(topology.EdgeIndexer).ListStarts(nodes, start)
}

var _ topology.EdgeIndexer = (*gpuTopology)(nil)

// sampleGraph is the graph Sample draws from: the GPU copy when there is one.
func (s *Store) sampleGraph() topology.Graph {
	s.place.RLock()
	defer s.place.RUnlock()
	if g := s.gpu; g != nil && g.topo != nil {
		return g.topo
	}
	return s.graph
}

// loadGPUTopologies copies, for Options.GPUTopology, the topology of every edge type that no
// tier stack holds as its own (every edge type of a graph of several types) to the GPU, so that
// heterogeneous samples are drawn there, the same as on the host. Without the CUDA shim or a GPU
// the session samples on the host, as a stack does; an edge type whose topology is not in memory
// is an error.
func (ss *Session) loadGPUTopologies() error {
	if ss.opt.GPUTopology == "" {
		return nil
	}
	var own []int
	for e, es := range ss.edges {
		if ss.stackGraph(e) == nil {
			if _, err := gpuTopologyCSC(ss.opt, es.graph, ss.m.Dir(), es.spec.Key()); err != nil {
				return err
			}
			own = append(own, e)
		}
	}
	if len(own) == 0 {
		return nil
	}
	info, err := cuda.Info(ss.opt.GPUDevice) // loads the CUDA shim: its error where it cannot
	if err != nil {
		ss.gpuTopoErr = err
		return nil
	}
	ss.gpuDev = info.Ordinal
	ss.gpuEdges = make([]*gpuTopology, len(ss.edges))
	for _, e := range own {
		csc := ss.edges[e].graph.(*topology.CSC)
		if ss.gpuEdges[e], err = newGPUTopology(info.Ordinal, info.SMs*8, csc, ss.opt.GPUTopology == GPUTopologyPinned); err != nil {
			return fmt.Errorf("edge type %s: %w", ss.edges[e].spec.Key(), err)
		}
	}
	return nil
}

// stackGraph is the tier stack that holds edge type e as its own topology (a one-type dataset),
// or nil.
func (ss *Session) stackGraph(e int) *Store {
	es := ss.edges[e]
	if es.src != es.dst || len(ss.edges) != 1 {
		return nil
	}
	if st := ss.nodes[es.dst].stack; st != nil && st.graph != nil {
		return st
	}
	return nil
}

// sampleGraph is the graph edge type e is sampled from: its GPU copy when there is one.
func (ss *Session) sampleGraph(e int) topology.Graph {
	if st := ss.stackGraph(e); st != nil {
		return st.sampleGraph()
	}
	if ss.gpuEdges != nil && ss.gpuEdges[e] != nil {
		return ss.gpuEdges[e]
	}
	return ss.edges[e].graph
}

// hostSampleGraph is the graph edge type e is sampled from on the host: its stack's in memory
// (Store.hostSampleGraph), else the session's own copy.
func (ss *Session) hostSampleGraph(e int) topology.Graph {
	if st := ss.stackGraph(e); st != nil {
		return st.hostSampleGraph()
	}
	return ss.edges[e].graph
}

// freeGPUTopologies frees what loadGPUTopologies copied; Close calls it after every call left.
func (ss *Session) freeGPUTopologies() {
	for _, t := range ss.gpuEdges {
		if t != nil {
			t.free(ss.gpuDev)
		}
	}
	ss.gpuEdges = nil
}

// GPUSampling reports whether heterogeneous samples are drawn on the GPU (Options.GPUTopology),
// and if not, why.
func (ss *Session) GPUSampling() (bool, string) {
	switch {
	case ss.opt.GPUTopology == "":
		return false, "no GPU topology was asked for (gpu_topology)"
	case ss.gpuTopoErr != nil:
		return false, ss.gpuTopoErr.Error()
	}
	for e := range ss.edges {
		if st := ss.stackGraph(e); st != nil {
			if ok, why := st.GPUAvailable(); !ok {
				return false, why
			}
		}
	}
	return len(ss.edges) > 0, "the dataset has no topology"
}
