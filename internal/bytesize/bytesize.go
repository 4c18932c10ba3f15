// Package bytesize prints byte counts for people: the largest binary unit that keeps a count of
// at least one, so that a small count never reads as "0.0 GiB".
package bytesize

import "fmt"

// Format prints n with a binary unit: "12 B", "1.50 KiB", "3.25 GiB", "1.00 TiB".
func Format(n int64) string {
	switch {
	case n >= 1<<40 || n <= -(1<<40):
		return fmt.Sprintf("%.2f TiB", float64(n)/(1<<40))
	case n >= 1<<30 || n <= -(1<<30):
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20 || n <= -(1<<20):
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10 || n <= -(1<<10):
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
