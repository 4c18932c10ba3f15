package cli

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progressBar draws "stage [####    ] 42%" on stderr when stderr is a terminal, at most ten times
// a second; elsewhere it prints nothing.
type progressBar struct {
	tty   bool
	stage string
	last  time.Time
}

func newProgressBar() *progressBar {
	_, err := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	return &progressBar{tty: err == nil}
}

// update is a progress callback: stage name, work done, work total.
func (p *progressBar) update(stage string, done, total int64) {
	if !p.tty {
		return
	}
	if stage != p.stage {
		if p.stage != "" {
			fmt.Fprintln(os.Stderr)
		}
		p.stage = stage
	} else if time.Since(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = time.Now()
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if float64(i) < frac*width {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(os.Stderr, "\r%-18s [%s] %3.0f%%", stage, bar, 100*frac)
}

func (p *progressBar) done() {
	if p.tty && p.stage != "" {
		fmt.Fprintln(os.Stderr)
	}
}
