package ingest

import (
	"fmt"

	"github.com/tierfs/tierfs/internal/bytesize"
	"github.com/tierfs/tierfs/internal/sysinfo"
)

// Ingest and synth hold bytesPerNode of bookkeeping per node (the degree counts that become the
// fill cursors, then indptr) plus fixedBuffers; checkNodes refuses a node count whose
// bookkeeping would not fit the memory available, before it is allocated.
const (
	bytesPerNode = 16
	fixedBuffers = 100 << 20
)

// checkNodes refuses nodes whose bookkeeping exceeds the machine's available memory; what says
// where the count came from. Where the memory cannot be read the check passes.
func checkNodes(nodes int64, what string) error {
	avail, err := sysinfo.MemAvailable()
	if err != nil || nodes <= 0 {
		return nil
	}
	if need := nodes*bytesPerNode + fixedBuffers; nodes > (avail-fixedBuffers)/bytesPerNode {
		return fmt.Errorf("ingest: %s: %d nodes need %s of memory while building (%d B a node), more than the %s available",
			what, nodes, bytesize.Format(need), bytesPerNode, bytesize.Format(avail))
	}
	return nil
}

// checkSpace refuses writing need bytes under dir when its file system has less free; what
// names the parts. Where the free space cannot be read the check passes.
func checkSpace(dir string, need int64, what string) error {
	free, err := sysinfo.FreeBytes(dir)
	if err != nil || need <= free {
		return nil
	}
	return fmt.Errorf("ingest: %s need %s on %s, which has %s free", what, bytesize.Format(need), dir, bytesize.Format(free))
}
