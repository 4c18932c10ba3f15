package main

import (
	"strings"
	"testing"

	"github.com/tierfs/tierfs/gpuio"
)

// TIERFS_FAULTS is read here, at the C ABI, not in the core: unset is no injector (a nil
// interface), rules are a *gpuio.Faults, a bad value is TFS_EINVAL naming the variable.
func TestEnvFaults(t *testing.T) {
	t.Setenv(FaultsEnv, "")
	if f, err := envFaults(); f != nil || err != nil {
		t.Errorf("unset: %v, %v; want no injector", f, err)
	}
	t.Setenv(FaultsEnv, "eio:every=3;flip:path=epoch-")
	if f, err := envFaults(); err != nil || len(f.(*gpuio.Faults).Rules) != 2 {
		t.Errorf("two rules: %v, %v", f, err)
	}
	t.Setenv(FaultsEnv, "bogus")
	if _, err := envFaults(); classify(err, stEIO) != stEINVAL || !strings.Contains(err.Error(), "TIERFS_FAULTS") {
		t.Errorf("a bad value: %v (status %d); want TFS_EINVAL naming TIERFS_FAULTS", err, classify(err, stEIO))
	}
}
