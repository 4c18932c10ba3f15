package cuda

import (
	"errors"
	"testing"
)

// TestLoad loads the shim where there is one and a GPU; elsewhere it checks that the failure is
// a clean ErrUnavailable with a reason, which is what every caller falls back on.
func TestLoad(t *testing.T) {
	err := Load()
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Load failed with %v, want an error wrapping ErrUnavailable", err)
		}
		t.Skipf("no GPU path here: %v", err)
	}
	d, err := Info(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %s: %+v", Path(), d)
}
