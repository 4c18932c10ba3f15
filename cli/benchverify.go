package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierfs/tierfs/advise"
)

// verifyRoundsFlag is --verify-compare of the gather benchmarks: rounds of the disk-reading
// configurations with verified reads off and on, alternating, on the same ids.
func verifyRoundsFlag(fs *pflag.FlagSet) *int {
	return fs.Int("verify-compare", 0, "instead of the usual configurations, run those that read the disk this many rounds with reads unverified and verified alternating, on the same ids, and report verified/unverified rows/s (what verification costs)")
}

// verifyCost is what --verify-compare measured for one configuration.
type verifyCost struct {
	Config     string    `json:"config"`
	Unverified []float64 `json:"unverified_rows_per_s"` // per round
	Verified   []float64 `json:"verified_rows_per_s"`
	Ratio      float64   `json:"ratio"` // median verified / median unverified
}

// compareVerify runs each config rounds times with verification off then on (the order
// swapped every other round so neither side always runs second) and prints the medians and
// their ratio. run gathers the config's ids with the given verification and returns rows/s.
func compareVerify(rounds int, configs []string, run func(config string, verify bool) (float64, error)) ([]verifyCost, error) {
	if rounds < 1 {
		return nil, fmt.Errorf("--verify-compare %d: want rounds >= 1", rounds)
	}
	costs := make([]verifyCost, len(configs))
	for i, c := range configs {
		costs[i].Config = c
	}
	for r := range rounds {
		for i, c := range configs {
			for _, verify := range []bool{r%2 == 1, r%2 == 0} {
				rate, err := run(c, verify)
				if err != nil {
					return nil, fmt.Errorf("%s (verify-reads %t, round %d): %w", c, verify, r+1, err)
				}
				if verify {
					costs[i].Verified = append(costs[i].Verified, rate)
				} else {
					costs[i].Unverified = append(costs[i].Unverified, rate)
				}
			}
		}
	}
	fmt.Printf("\nverified reads, %d alternating rounds on the same ids:\n%-12s %14s %14s %9s  %s\n", rounds, "configuration", "unverified/s", "verified/s", "ratio", "rounds (unverified / verified rows/s)")
	for i := range costs {
		c := &costs[i]
		u, v := advise.Median(c.Unverified), advise.Median(c.Verified)
		c.Ratio = v / u
		var each []string
		for k := range c.Unverified {
			each = append(each, fmt.Sprintf("%.0f/%.0f", c.Unverified[k], c.Verified[k]))
		}
		fmt.Printf("%-12s %14.0f %14.0f %9.3f  %s\n", c.Config, u, v, c.Ratio, strings.Join(each, " "))
	}
	return costs, nil
}
