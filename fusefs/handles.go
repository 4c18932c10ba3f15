package fusefs

import (
	"context"
	"iter"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// snapshot is an open genFile: the content made at open.
type snapshot struct{ data []byte }

func (s *snapshot) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(s.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(s.data[off:min(off+int64(len(dest)), int64(len(s.data)))]), 0
}

// streamHandle is an open streamFile. It pulls chunks from its stream as reads move forward and
// keeps only the bytes not yet read; a read before them restarts the stream.
type streamHandle struct {
	m      *View
	chunks func() iter.Seq[[]byte]

	mu       sync.Mutex
	next     func() ([]byte, bool) // nil before the first read and after stop
	stopPull func()
	buf      []byte // stream bytes from bufStart on, pulled but not yet read past
	bufStart int64
	eof      bool
}

func (h *streamHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var out []byte
	err := h.m.use(func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if off < h.bufStart || h.next == nil && !h.eof {
			h.restart()
		}
		for !h.eof && h.bufStart+int64(len(h.buf)) < off+int64(len(dest)) {
			chunk, ok := h.next()
			if !ok {
				h.stopLocked()
				h.eof = true
				break
			}
			h.buf = append(h.buf, chunk...)
		}
		if skip := min(off-h.bufStart, int64(len(h.buf))); skip > 0 {
			h.buf = append(h.buf[:0], h.buf[skip:]...)
			h.bufStart += skip
		}
		if off == h.bufStart {
			out = append(out, h.buf[:min(len(dest), len(h.buf))]...)
		}
		return nil
	})
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(out), 0
}

// restart begins the stream again from its first byte.
func (h *streamHandle) restart() {
	h.stopLocked()
	h.next, h.stopPull = iter.Pull(h.chunks())
	h.buf, h.bufStart, h.eof = h.buf[:0], 0, false
}

func (h *streamHandle) stopLocked() {
	if h.stopPull != nil {
		h.stopPull()
	}
	h.next, h.stopPull = nil, nil
}

// stop ends the stream's pull for good (on release and unmount).
func (h *streamHandle) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopLocked()
	h.eof = true
}

func (h *streamHandle) Release(context.Context) syscall.Errno {
	h.m.streamsMu.Lock()
	if h.m.streams != nil {
		delete(h.m.streams, h)
	}
	h.m.streamsMu.Unlock()
	h.stop()
	return 0
}
