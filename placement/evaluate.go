package placement

// SSDRowsPerBatch is the feature rows per batch that the batches counted in eval read from SSD
// under p: the eval counts of the rows p leaves on SSD, over eval's batches. Count eval on
// batches p was not made from (a held-out epoch) to see how well p predicts training.
func SSDRowsPerBatch(p *Placement, eval *Hotness) float64 {
	if eval.Batches == 0 {
		return 0
	}
	var rows float64
	for v, c := range eval.Feature {
		if p.Tier(int64(v), KindFeature) == TierSSD {
			rows += float64(c)
		}
	}
	return rows / float64(eval.Batches)
}

// HindsightSSDRowsPerBatch is the bar for a static placement of cacheRows feature rows on the
// batches counted in eval: SSD rows per batch when the cacheRows rows those batches read most are
// cached, as if chosen after seeing them.
func HindsightSSDRowsPerBatch(eval *Hotness, cacheRows int64) float64 {
	if eval.Batches == 0 {
		return 0
	}
	return missesUnder(eval.Feature, eval.Feature, cacheRows) / float64(eval.Batches)
}
