package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.00 KiB"}, {1536, "1.50 KiB"}, {5 << 20, "5.00 MiB"},
		{3<<30 + 1<<28, "3.25 GiB"}, {1 << 40, "1.00 TiB"}, {-2048, "-2.00 KiB"},
	} {
		if got := Format(c.n); got != c.want {
			t.Errorf("Format(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
