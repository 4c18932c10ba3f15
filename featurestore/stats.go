package featurestore

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierfs/tierfs/gpuio"
	"github.com/tierfs/tierfs/tiers"
)

// ErrIDOutOfRange is wrapped by errors about node ids outside [0, NumNodes).
var ErrIDOutOfRange = errors.New("node id out of range")

// ErrNotFound is wrapped by errors about a named thing (split, feature) the dataset lacks.
var ErrNotFound = errors.New("not found")

// TierStats describes one tier: what it holds and what it served.
type TierStats struct {
	Tier        tiers.Kind `json:"tier"`
	RowsHeld    int64      `json:"rows_held"`
	BytesHeld   int64      `json:"bytes_held"` // memory the tier takes (rows and index); for ssd, bytes of the feature files
	Hits        uint64     `json:"hits"`       // rows served
	BytesServed uint64     `json:"bytes_served"`
}

// Stats is a snapshot of a store's counters since Open.
type Stats struct {
	Dataset      string      `json:"dataset"`
	IOBackend    string      `json:"io_backend"`
	Gathers      uint64      `json:"gathers"`
	RowsGathered uint64      `json:"rows_gathered"`
	GatherTime   float64     `json:"gather_seconds"` // summed wall time of Gather calls
	Tiers        []TierStats `json:"tiers"`          // fastest first
	IO           gpuio.Stats `json:"io"`             // disk reads of every IO stack, features and topology
	Samples      uint64      `json:"samples"`
}

type counters struct {
	gathers, rows, hostHits, ssdHits, rowBytes, gatherNanos, samples atomic.Uint64

	ioMu sync.Mutex
	io   map[*gpuio.Stack]gpuio.Stats
}

func (c *counters) gather(rows, hostHits, ssdHits int, rowBytes int64, took time.Duration) {
	c.gathers.Add(1)
	c.rows.Add(uint64(rows))
	c.hostHits.Add(uint64(hostHits))
	c.ssdHits.Add(uint64(ssdHits))
	c.rowBytes.Store(uint64(rowBytes))
	c.gatherNanos.Add(uint64(took.Nanoseconds()))
}

// noteIO records a stack's counters; called by the goroutine that holds the stack.
func (c *counters) noteIO(st *gpuio.Stack) {
	c.ioMu.Lock()
	if c.io == nil {
		c.io = map[*gpuio.Stack]gpuio.Stats{}
	}
	c.io[st] = st.Stats()
	c.ioMu.Unlock()
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	rb := uint64(s.spec.RowBytes)
	st := Stats{
		Dataset: s.m.Dir(), IOBackend: string(s.backend),
		Gathers: c.gathers.Load(), RowsGathered: c.rows.Load(), GatherTime: float64(c.gatherNanos.Load()) / 1e9,
		Samples: c.samples.Load(),
	}
	s.place.RLock()
	hostRows, hostBytes := s.host.Rows(), s.host.Bytes()
	s.place.RUnlock()
	var ssdBytes int64
	for k := range s.spec.Files {
		ssdBytes += s.spec.ContentBytesOfFile(k)
	}
	st.Tiers = []TierStats{
		{Tier: tiers.Host, RowsHeld: hostRows, BytesHeld: hostBytes, Hits: c.hostHits.Load(), BytesServed: c.hostHits.Load() * rb},
		{Tier: tiers.SSD, RowsHeld: s.NumNodes(), BytesHeld: ssdBytes, Hits: c.ssdHits.Load(), BytesServed: c.ssdHits.Load() * rb},
	}
	c.ioMu.Lock()
	st.IO.Backend = s.backend
	for _, io := range c.io {
		st.IO.Requests += io.Requests
		st.IO.Reads += io.Reads
		st.IO.BytesRequested += io.BytesRequested
		st.IO.BytesRead += io.BytesRead
		for i, n := range io.LatencyHistogram {
			st.IO.LatencyHistogram[i] += n
		}
	}
	c.ioMu.Unlock()
	return st
}
