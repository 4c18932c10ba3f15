package planned

import "github.com/tierfs/tierfs/topology"

// The record functions for a Store's sample of seed nodes (nodeShape), as the record tests take
// them.

// sampleRecordLen is the bytes of the record of smp.
func sampleRecordLen(smp *topology.Sample) (int64, error) {
	a, err := nodeShape.arraysOf(&batchDraw{sample: smp})
	if err != nil {
		return 0, err
	}
	n, _, err := nodeShape.recordLen(a)
	return n, err
}

// encodeSample is the record of smp.
func encodeSample(smp *topology.Sample) ([]byte, error) {
	a, err := nodeShape.arraysOf(&batchDraw{sample: smp})
	if err != nil {
		return nil, err
	}
	return nodeShape.encode(a)
}

// decodeSample is the sample of record rec (8-byte aligned; see recordShape.decode).
func decodeSample(rec []byte) (*topology.Sample, error) {
	a, err := nodeShape.decode(rec)
	if err != nil {
		return nil, err
	}
	return nodeShape.drawOf(a).sample, nil
}
