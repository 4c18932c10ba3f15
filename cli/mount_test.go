package cli

import (
	"strings"
	"testing"
)

// `tierfs mount DS ""` is refused before a server starts (it used to mount over the working
// directory), and so is a mountpoint that is already a mount.
func TestMountRefusesEmptyAndMountedMountpoints(t *testing.T) {
	quiet(t)
	ds := t.TempDir()
	if err := execute([]string{"mount", ds, ""}); err == nil || !strings.Contains(err.Error(), "mountpoint is empty") {
		t.Errorf("tierfs mount DS \"\": %v", err)
	}
	if err := execute([]string{"mount", ds, "/proc"}); err == nil || !strings.Contains(err.Error(), "/proc is already a mountpoint") {
		t.Errorf("tierfs mount DS /proc: %v", err)
	}
}
