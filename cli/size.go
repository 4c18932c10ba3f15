package cli

import (
	"fmt"
	"strconv"
	"strings"
)

var sizeUnits = []struct {
	suffix string
	scale  float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1},
}

// parseSize reads a byte count: plain bytes, or a number with a unit (KB/MB/GB/TB are powers of
// 1000; KiB/MiB/GiB/TiB and the bare K/M/G/T powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	scale := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, scale = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*scale > 1<<62 {
		return 0, fmt.Errorf("size %q is not a byte count like 4096, 512MB or 4GiB", s)
	}
	return int64(v * scale), nil
}
