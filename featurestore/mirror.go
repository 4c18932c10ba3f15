package featurestore

import "github.com/tierfs/tierfs/internal/cuda"

// mirror is pinned host memory and device memory of the same size, for data staged on the host
// and copied to the device or back. It grows on demand and keeps no contents across growth.
type mirror struct {
	host     []byte // pinned and mapped; C memory
	hostAddr uintptr
	dev      uintptr
}

// ensure makes both buffers hold at least need bytes, reallocating them at size (>= need) when
// they are smaller.
func (m *mirror) ensure(dev, need, size int) error {
	if need <= len(m.host) {
		return nil
	}
	m.free(dev)
	addr, buf, err := cuda.HostAlloc(dev, uint64(size))
	if err != nil {
		return err
	}
	m.hostAddr, m.host = addr, buf
	if m.dev, err = cuda.Malloc(dev, uint64(size)); err != nil {
		m.free(dev)
		return err
	}
	return nil
}

func (m *mirror) free(dev int) {
	if m.hostAddr != 0 {
		cuda.HostFree(dev, m.hostAddr)
	}
	if m.dev != 0 {
		cuda.Free(dev, m.dev)
	}
	*m = mirror{}
}
